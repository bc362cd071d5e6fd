// Package controllers runs Portcullis in a cluster: one reconciler gathers every input
// into egress.Resources, runs the pure translator with the DNS guard's addresses,
// publishes the result to the xDS server, provisions Envoy, and writes statuses.
package controllers

import (
	"context"
	"fmt"
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
	// walk is the last walk for the references (gather_walks.go).
	walk referencesWalk
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
	lists := []struct {
		kind listKind
		list client.ObjectList
		take func(client.ObjectList)
	}{
		{listGatewayClasses, &gwapiv1.GatewayClassList{}, func(l client.ObjectList) { res.GatewayClasses = l.(*gwapiv1.GatewayClassList).Items }},
		{listGateways, &gwapiv1.GatewayList{}, func(l client.ObjectList) { res.Gateways = l.(*gwapiv1.GatewayList).Items }},
		{listHTTPRoutes, &gwapiv1.HTTPRouteList{}, func(l client.ObjectList) { res.HTTPRoutes = l.(*gwapiv1.HTTPRouteList).Items }},
		{listTLSRoutes, &gwapiv1.TLSRouteList{}, func(l client.ObjectList) { res.TLSRoutes = l.(*gwapiv1.TLSRouteList).Items }},
		{listTCPRoutes, &gwapiv1.TCPRouteList{}, func(l client.ObjectList) { res.TCPRoutes = l.(*gwapiv1.TCPRouteList).Items }},
		{listReferenceGrants, &gwapiv1.ReferenceGrantList{}, func(l client.ObjectList) { res.ReferenceGrants = l.(*gwapiv1.ReferenceGrantList).Items }},
		{listBackendTLSPolicies, &gwapiv1.BackendTLSPolicyList{}, func(l client.ObjectList) { res.BackendTLSPolicies = l.(*gwapiv1.BackendTLSPolicyList).Items }},
		{listBackends, &egressv1alpha1.BackendList{}, func(l client.ObjectList) { res.Backends = l.(*egressv1alpha1.BackendList).Items }},
		{listServices, &corev1.ServiceList{}, func(l client.ObjectList) { res.Services = l.(*corev1.ServiceList).Items }},
		{listEndpointSlices, &discoveryv1.EndpointSliceList{}, func(l client.ObjectList) { res.EndpointSlices = l.(*discoveryv1.EndpointSliceList).Items }},
		{listNamespaces, &corev1.NamespaceList{}, func(l client.ObjectList) { res.Namespaces = l.(*corev1.NamespaceList).Items }},
	}
	for _, l := range lists {
		list, err := g.list(ctx, l.kind, l.list)
		if err != nil {
			return nil, fmt.Errorf("list %T: %w", l.list, err)
		}
		l.take(list)
	}
	if err := g.gatherXBackends(ctx, res); err != nil {
		return nil, err
	}
	return res, g.readReferenced(ctx, res)
}

// readReferenced adds the Secrets and ConfigMaps the objects refer to. A missing one is
// simply absent: the translator reports it in the referring object's status.
//
// When every object read is the one the last gather read, the last gather's slices are
// handed out again: copying 20,000 Secret structs into a new slice on every gather cost
// 12 MB each time, and twice that while the last translation (which keeps its input)
// and the new one were both alive. Nothing downstream modifies a gathered slice.
func (g *gatherer) readReferenced(ctx context.Context, res *egress.Resources) error {
	refs := g.walk.references(res)
	seen := make(map[translate.ObjectRef]bool, len(refs))
	objs := make([]client.Object, 0, len(refs))
	for _, ref := range refs {
		seen[ref] = true
		obj, err := g.read(ctx, ref)
		if err != nil {
			return err
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
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
