// Package controllers runs Portcullis in a cluster: one reconciler gathers every input
// into egress.Resources, runs the pure translator with the DNS guard's addresses,
// publishes the result to the xDS server, provisions Envoy, and writes statuses.
package controllers

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// gatherer reads every input of translation. Lists come from the informer cache.
// Secrets and ConfigMaps are watched as metadata only and read by name when referenced,
// so the manager never holds every Secret of the cluster in memory; a read is reused
// while the object's resourceVersion is unchanged.
type gatherer struct {
	cache client.Reader
	api   client.Reader
	memo  map[translate.ObjectRef]client.Object
	// memoChanged is set when the memo gains, replaces or loses an object; until then
	// the Secrets and ConfigMaps of the last gather are handed out again (readReferenced).
	memoChanged bool
	secrets     []corev1.Secret
	configMaps  []corev1.ConfigMap
	// xbackends: the XBackend CRD is served, so XBackends are listed (xbackend.go).
	xbackends bool
	// events counts each kind's informer events when the watches do (gather_reuse.go);
	// kept are the kinds' last lists.
	events *listEvents
	kept   [numListKinds]keptList
	// patched is what the last gather patched of each kind (gather_patch.go).
	patched [numListKinds]listPatch
	// walk is the last walk for the references (gather_walks.go).
	walk referencesWalk
	// refNotes are the Secrets and ConfigMaps whose events came, refsLast the references
	// the last gather read, and refsRead whether it read them all (gather_refs_noted.go).
	refNotes refNotes
	refsLast []translate.ObjectRef
	refsRead bool
}

func newGatherer(cache, api client.Reader) *gatherer {
	return &gatherer{cache: cache, api: api, memo: map[translate.ObjectRef]client.Object{}, memoChanged: true}
}

// gather returns a snapshot of every input object. The objects are the informer
// cache's own, not copies (copying 20,000 Backends and routes on every change was most
// of the gather): nothing downstream may modify them. Translation leaves its input as
// it was (TestGolden checks it) and the status writer merges into copies.
func (g *gatherer) gather(ctx context.Context) (*egress.Resources, error) {
	res := &egress.Resources{}
	lists := []gatherList{
		listed(listGatewayClasses, func(l *gwapiv1.GatewayClassList) *[]gwapiv1.GatewayClass { return &l.Items }, &res.GatewayClasses),
		listed(listGateways, func(l *gwapiv1.GatewayList) *[]gwapiv1.Gateway { return &l.Items }, &res.Gateways),
		pointed(listHTTPRoutes, func(l *gwapiv1.HTTPRouteList) *[]gwapiv1.HTTPRoute { return &l.Items }, &res.HTTPRoutes),
		listed(listTLSRoutes, func(l *gwapiv1.TLSRouteList) *[]gwapiv1.TLSRoute { return &l.Items }, &res.TLSRoutes),
		listed(listTCPRoutes, func(l *gwapiv1.TCPRouteList) *[]gwapiv1.TCPRoute { return &l.Items }, &res.TCPRoutes),
		listed(listReferenceGrants, func(l *gwapiv1.ReferenceGrantList) *[]gwapiv1.ReferenceGrant { return &l.Items }, &res.ReferenceGrants),
		listed(listBackendTLSPolicies, func(l *gwapiv1.BackendTLSPolicyList) *[]gwapiv1.BackendTLSPolicy { return &l.Items }, &res.BackendTLSPolicies),
		pointed(listBackends, func(l *egressv1alpha1.BackendList) *[]egressv1alpha1.Backend { return &l.Items }, &res.Backends),
		listed(listServices, func(l *corev1.ServiceList) *[]corev1.Service { return &l.Items }, &res.Services),
		listed(listEndpointSlices, func(l *discoveryv1.EndpointSliceList) *[]discoveryv1.EndpointSlice { return &l.Items }, &res.EndpointSlices),
		listed(listNamespaces, func(l *corev1.NamespaceList) *[]corev1.Namespace { return &l.Items }, &res.Namespaces),
	}
	for _, l := range lists {
		if err := g.gatherKind(ctx, l); err != nil {
			return nil, err
		}
	}
	if err := g.gatherXBackends(ctx, res); err != nil {
		return nil, err
	}
	return res, g.readReferenced(ctx, res)
}

// gatherList is one kind the gather lists: how to list its items in full, its
// patchFunc, and where its items go.
type gatherList struct {
	kind  listKind
	what  reflect.Type // the list type, for errors
	list  func(ctx context.Context, cache client.Reader) (any, error)
	patch patchFunc
	take  func(items any)
}

// listed is the gatherList of kind k held by value, whose list type's items are
// items(list), put into *into.
func listed[T any, PT interface {
	*T
	client.Object
}, L any, PL interface {
	*L
	client.ObjectList
}](k listKind, items func(PL) *[]T, into *[]T) gatherList {
	return gathered[T, PT, L, PL](k, items, into, byValue[T, PT](), func(l []T) []T { return l })
}

// pointed is the gatherList of kind k held by pointer (holding says why), whose list
// type's items are items(list), put into *into.
func pointed[T any, PT interface {
	*T
	client.Object
}, L any, PL interface {
	*L
	client.ObjectList
}](k listKind, items func(PL) *[]T, into *[]*T) gatherList {
	return gathered[T, PT, L, PL](k, items, into, byPointer[T, PT](), egress.PointersTo[T])
}

// gathered is the gatherList of kind k whose items E hold its objects as h says; hold
// turns a listed list's items into them.
func gathered[T any, PT interface {
	*T
	client.Object
}, L any, PL interface {
	*L
	client.ObjectList
}, E any](k listKind, items func(PL) *[]T, into *[]E, h holding[E], hold func([]T) []E) gatherList {
	return gatherList{kind: k, what: reflect.TypeFor[PL](), patch: patcher(h),
		list: func(ctx context.Context, cache client.Reader) (any, error) {
			l := PL(new(L))
			err := cache.List(ctx, l, client.UnsafeDisableDeepCopy)
			return hold(*items(l)), err
		},
		take: func(got any) { *into = got.([]E) }}
}

// gatherKind lists (or patches, or hands out again) one kind into its place.
func (g *gatherer) gatherKind(ctx context.Context, l gatherList) error {
	items, err := g.list(ctx, l)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.what, err)
	}
	l.take(items)
	return nil
}

// readReferenced adds the Secrets and ConfigMaps the objects refer to. A missing one is
// simply absent: the translator reports it in the referring object's status.
//
// Only the objects not read yet and those whose metadata events came since the last
// gather are read (gather_refs_noted.go). When every object is the one the last gather
// read, the last gather's slices are handed out again: copying 20,000 Secret structs
// into a new slice on every gather cost 12 MB each time, and twice that while the last
// translation (which keeps its input) and the new one were both alive. Nothing
// downstream modifies a gathered slice.
func (g *gatherer) readReferenced(ctx context.Context, res *egress.Resources) error {
	refs := g.walk.references(res, g.patched[listBackends])
	noted := g.refNotes.take(g.refsRead)
	if noted.nothingNew() && sameList(refs, g.refsLast) && !g.memoChanged {
		res.Secrets, res.ConfigMaps = g.secrets, g.configMaps
		return nil
	}
	g.refsRead = false // until every noted object taken is read (gather_refs_noted.go)
	seen := make(map[translate.ObjectRef]bool, len(refs))
	objs := make([]client.Object, 0, len(refs))
	for _, ref := range refs {
		seen[ref] = true
		obj, ok := g.memo[ref]
		if !ok || !noted.trusts(ref) {
			var err error
			if obj, err = g.read(ctx, ref); err != nil {
				return err
			}
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
	g.refsLast, g.refsRead = refs, true
	for ref := range g.memo {
		if !seen[ref] {
			delete(g.memo, ref)
			g.memoChanged = true
		}
	}
	if g.memoChanged {
		var secrets []corev1.Secret
		var configMaps []corev1.ConfigMap
		for _, obj := range objs {
			switch o := obj.(type) {
			case *corev1.Secret:
				secrets = append(secrets, *o)
			case *corev1.ConfigMap:
				configMaps = append(configMaps, *o)
			}
		}
		g.secrets, g.configMaps, g.memoChanged = slices.Clip(secrets), slices.Clip(configMaps), false
	}
	res.Secrets, res.ConfigMaps = g.secrets, g.configMaps
	return nil
}

// read returns the referenced object, or nil when it does not exist.
func (g *gatherer) read(ctx context.Context, ref translate.ObjectRef) (client.Object, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(ref.Kind))
	if err := g.cache.Get(ctx, ref.Name, meta); err != nil {
		if apierrors.IsNotFound(err) {
			if _, ok := g.memo[ref]; ok {
				delete(g.memo, ref)
				g.memoChanged = true
			}
			return nil, nil
		}
		return nil, fmt.Errorf("get %s %s metadata: %w", ref.Kind, ref.Name, err)
	}
	if cached, ok := g.memo[ref]; ok && cached.GetResourceVersion() == meta.ResourceVersion {
		return cached, nil
	}
	obj := client.Object(&corev1.Secret{})
	if ref.Kind == "ConfigMap" {
		obj = &corev1.ConfigMap{}
	}
	if err := g.api.Get(ctx, ref.Name, obj); err != nil {
		if apierrors.IsNotFound(err) {
			if _, ok := g.memo[ref]; ok {
				delete(g.memo, ref)
				g.memoChanged = true
			}
			return nil, nil
		}
		return nil, fmt.Errorf("get %s %s: %w", ref.Kind, ref.Name, err)
	}
	// Kept for as long as it is referenced, and only its data matters: not its
	// managedFields, nor its annotations (among them the copy of it `kubectl apply`
	// keeps, and whatever a tenant writes there).
	obj.SetManagedFields(nil)
	obj.SetAnnotations(nil)
	g.memo[ref] = obj
	g.memoChanged = true
	return obj, nil
}
