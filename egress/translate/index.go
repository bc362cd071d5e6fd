package translate

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// translator holds the lookups built once per translation and the results being built.
type translator struct {
	opts  Options
	addrs egress.Addresses
	// cache and epoch keep certificate checks and units across translations; reads
	// notes what the unit being computed reads (nil outside a unit).
	cache *Cache
	epoch uint64
	reads *unitReads
	// validUntil is when the verdict of a certificate check outside any Backend changes
	// (zero: never), kept as certificates are checked; each Backend's own is kept in its
	// slot (translateBackend), so that a delta can put Result.ValidUntil together from
	// the Backends it keeps and the ones it translates again.
	validUntil time.Time

	classes        map[string]*gwapiv1.GatewayClass
	gateways       []*gwapiv1.Gateway
	routes         []*gwapiv1.HTTPRoute
	routeList      []*gwapiv1.HTTPRoute // the input routes were sorted from (route_naming.go)
	streamRoutes   []*streamRoute       // TLSRoutes and TCPRoutes, oldest first
	grants         []*gwapiv1.ReferenceGrant
	backends       map[types.NamespacedName]*backendSlot
	backendIndex   *backendIndex // backends' slots, given back to the Cache when done
	xbackends      map[types.NamespacedName]*xbackendSlot
	policies       []*gwapiv1.BackendTLSPolicy
	services       map[types.NamespacedName]*corev1.Service
	slices         map[types.NamespacedName][]*discoveryv1.EndpointSlice // by Service
	secrets        map[types.NamespacedName]*corev1.Secret
	configMaps     map[types.NamespacedName]*corev1.ConfigMap
	namespaceLabel map[string]map[string]string

	// serviceCache memoises clusters for Services referenced directly by routes.
	serviceCache map[serviceKey]*translatedService
	// policyAncestors collects, per BackendTLSPolicy, the Gateways whose routes reach it.
	policyAncestors map[types.NamespacedName]map[types.NamespacedName]bool
	// policyConflicts holds, per losing policy, the message naming the winner.
	policyConflicts map[types.NamespacedName]string
	// callersOf memoises routeCallers; namingGrants is routeCallers' namesRoutes, made
	// on first use.
	callersOf    map[callersKey][]string
	namingGrants map[string]bool
	// routeRoom is how many routes the HTTPRoute statuses' map is made for on the first
	// status; lentRouteStatuses is set while that map is a kept route side's
	// (route_statuses.go).
	routeRoom         int
	lentRouteStatuses bool
	// tunnels memoises tunnelTargets (nil until a forward proxy asks).
	tunnels *[]tunnelTarget
	// delta is set when the translation runs as a delta of the last one (delta.go).
	delta *delta

	result Result
}

func newTranslator(res *egress.Resources, addrs egress.Addresses, opts Options) *translator {
	if opts.ControllerName == "" {
		opts.ControllerName = string(egress.ControllerName)
	}
	if res == nil {
		res = &egress.Resources{}
	}
	cache := opts.Cache
	if cache == nil {
		cache = defaultCache
	}
	nr := len(res.HTTPRoutes)
	t := &translator{
		opts: opts, addrs: addrs, cache: cache, epoch: cache.begin(), routeRoom: nr,
		classes:         map[string]*gwapiv1.GatewayClass{},
		slices:          map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		namespaceLabel:  make(map[string]map[string]string, len(res.Namespaces)),
		serviceCache:    map[serviceKey]*translatedService{},
		policyAncestors: map[types.NamespacedName]map[types.NamespacedName]bool{},
		policyConflicts: map[types.NamespacedName]string{},
		callersOf:       map[callersKey][]string{},
		result: Result{Statuses: Statuses{
			GatewayClasses:     map[string]*gwapiv1.GatewayClassStatus{},
			Gateways:           map[string]*gwapiv1.GatewayStatus{},
			HTTPRoutes:         map[string][]gwapiv1.RouteParentStatus{}, // sized or lent on the first status (route_statuses.go)
			TLSRoutes:          make(map[string][]gwapiv1.RouteParentStatus, len(res.TLSRoutes)),
			TCPRoutes:          make(map[string][]gwapiv1.RouteParentStatus, len(res.TCPRoutes)),
			Backends:           map[string]*egressv1alpha1.BackendStatus{}, // sized by finishBackendStatuses; a delta takes the last one's
			BackendTLSPolicies: map[string][]gwapiv1.PolicyAncestorStatus{},
			XBackends:          map[string]*gwapixv1alpha1.BackendStatus{},
		}},
	}
	t.index(res)
	return t
}

func (t *translator) index(res *egress.Resources) {
	for i := range res.GatewayClasses {
		t.classes[res.GatewayClasses[i].Name] = &res.GatewayClasses[i]
	}
	t.gateways = egress.PointersTo(res.Gateways)
	sortObjects(t.gateways)
	t.routes = sortedObjects(t.cache, t.epoch, "HTTPRoutes", res.HTTPRoutes)
	t.routeList = res.HTTPRoutes
	t.streamRoutes = streamRoutesOf(res)
	t.grants = egress.PointersTo(res.ReferenceGrants)
	t.policies = egress.PointersTo(res.BackendTLSPolicies)
	sortObjects(t.policies)
	t.backends = t.indexBackends(res.Backends)
	t.xbackends = indexXBackends(res.XBackends)
	t.services = indexedByName[corev1.Service](t.cache, t.epoch, "Services", res.Services)
	t.secrets = indexedByName[corev1.Secret](t.cache, t.epoch, "Secrets", res.Secrets)
	t.configMaps = indexedByName[corev1.ConfigMap](t.cache, t.epoch, "ConfigMaps", res.ConfigMaps)
	for i := range res.EndpointSlices {
		s := &res.EndpointSlices[i]
		if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" {
			key := types.NamespacedName{Namespace: s.Namespace, Name: svc}
			t.slices[key] = append(t.slices[key], s)
		}
	}
	for i := range res.Namespaces {
		t.namespaceLabel[res.Namespaces[i].Name] = res.Namespaces[i].Labels
	}
}

// object is what every Kubernetes object in Resources offers.
type object interface {
	GetNamespace() string
	GetName() string
}

// sortObjects orders objects by namespace/name so output never depends on input order.
func sortObjects[T object](objs []T) {
	sort.SliceStable(objs, func(i, j int) bool { return lessName(nameOf(objs[i]), nameOf(objs[j])) })
}

func indexByName[T any, P interface {
	*T
	object
}](in []T, into map[types.NamespacedName]*T) {
	for i := range in {
		into[nameOf(P(&in[i]))] = &in[i]
	}
}

func nameOf(o object) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}

// lessName orders names as their "namespace/name" strings order, without building them:
// sorting thousands of objects would otherwise allocate two strings per comparison.
func lessName(a, b types.NamespacedName) bool {
	if a.Namespace == b.Namespace {
		return a.Name < b.Name
	}
	short, long, flip := a.Namespace, b.Namespace, false
	if len(short) > len(long) {
		short, long, flip = long, short, true
	}
	if !strings.HasPrefix(long, short) {
		return a.Namespace < b.Namespace // they differ within the shorter one
	}
	// The shorter namespace is a prefix of the longer: its "/" meets the longer's next byte.
	if next := long[len(short)]; next != '/' {
		return ('/' < next) != flip
	}
	return a.String() < b.String() // a "/" inside a namespace: compare the strings themselves
}
