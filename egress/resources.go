// Package egress holds the pure core of Portcullis: Resources, the snapshot of every input
// object that controllers gather, and (in subpackages) the translator, the IR and the
// Envoy builders.
package egress

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// ControllerName is the GatewayClass controllerName Portcullis implements.
const ControllerName gwapiv1.GatewayController = "portcullis.io/gateway-controller"

// Resources is a plain snapshot of every object translation reads. Controllers gather it
// from informers; tests and `portcullis translate` read it from YAML. The translator
// treats it as read-only.
//
// Backends and HTTPRoutes, the kinds there are tens of thousands of, are held by
// pointer: the manager's gather makes the list of an edit by replacing one pointer in a
// copy of the last list, 80 KB at 10,000, where copying the objects themselves was 4 MB
// for the Backends and 3.8 MB for the HTTPRoutes (gather_patch.go in controllers). An
// object the gatherer handed out is never modified: an edit is a new one. It and Load
// make no nil entry; Translate skips one.
type Resources struct {
	GatewayClasses     []gwapiv1.GatewayClass      `json:"gatewayClasses,omitempty"`
	Gateways           []gwapiv1.Gateway           `json:"gateways,omitempty"`
	HTTPRoutes         []*gwapiv1.HTTPRoute        `json:"httpRoutes,omitempty"`
	TLSRoutes          []gwapiv1.TLSRoute          `json:"tlsRoutes,omitempty"`
	TCPRoutes          []gwapiv1.TCPRoute          `json:"tcpRoutes,omitempty"`
	ReferenceGrants    []gwapiv1.ReferenceGrant    `json:"referenceGrants,omitempty"`
	Backends           []*egressv1alpha1.Backend   `json:"backends,omitempty"`
	BackendTLSPolicies []gwapiv1.BackendTLSPolicy  `json:"backendTLSPolicies,omitempty"`
	Services           []corev1.Service            `json:"services,omitempty"`
	EndpointSlices     []discoveryv1.EndpointSlice `json:"endpointSlices,omitempty"`
	Secrets            []corev1.Secret             `json:"secrets,omitempty"`
	ConfigMaps         []corev1.ConfigMap          `json:"configMaps,omitempty"`
	Namespaces         []corev1.Namespace          `json:"namespaces,omitempty"`
	// Pods are the callers of isolated Gateways: only their namespace, name,
	// ServiceAccount, phase and IPs matter (the manager watches no more of them).
	Pods []corev1.Pod `json:"pods,omitempty"`
	// XBackends are the Gateway API's experimental XBackend
	// (gateway.networking.x-k8s.io/v1alpha1), gathered only when its CRD is served.
	XBackends []gwapixv1alpha1.XBackend `json:"xBackends,omitempty"`
}

// DeepCopy returns an independent copy, so a snapshot handed to the translator cannot
// change under it while informers keep updating their caches.
func (r *Resources) DeepCopy() *Resources {
	if r == nil {
		return nil
	}
	return &Resources{
		GatewayClasses:     copyAll(r.GatewayClasses, (*gwapiv1.GatewayClass).DeepCopy),
		Gateways:           copyAll(r.Gateways, (*gwapiv1.Gateway).DeepCopy),
		HTTPRoutes:         copyPointed(r.HTTPRoutes, (*gwapiv1.HTTPRoute).DeepCopy),
		TLSRoutes:          copyAll(r.TLSRoutes, (*gwapiv1.TLSRoute).DeepCopy),
		TCPRoutes:          copyAll(r.TCPRoutes, (*gwapiv1.TCPRoute).DeepCopy),
		ReferenceGrants:    copyAll(r.ReferenceGrants, (*gwapiv1.ReferenceGrant).DeepCopy),
		Backends:           copyPointed(r.Backends, (*egressv1alpha1.Backend).DeepCopy),
		BackendTLSPolicies: copyAll(r.BackendTLSPolicies, (*gwapiv1.BackendTLSPolicy).DeepCopy),
		Services:           copyAll(r.Services, (*corev1.Service).DeepCopy),
		EndpointSlices:     copyAll(r.EndpointSlices, (*discoveryv1.EndpointSlice).DeepCopy),
		Secrets:            copyAll(r.Secrets, (*corev1.Secret).DeepCopy),
		ConfigMaps:         copyAll(r.ConfigMaps, (*corev1.ConfigMap).DeepCopy),
		Namespaces:         copyAll(r.Namespaces, (*corev1.Namespace).DeepCopy),
		Pods:               copyAll(r.Pods, (*corev1.Pod).DeepCopy),
		XBackends:          copyAll(r.XBackends, (*gwapixv1alpha1.XBackend).DeepCopy),
	}
}

func copyAll[T any](in []T, deepCopy func(*T) *T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		out[i] = *deepCopy(&in[i])
	}
	return out
}

// Append appends every object of o to r, kind by kind, in o's order: `portcullis
// translate` decodes objects on every CPU, each into a Resources of its own, and joins
// them in input order.
func (r *Resources) Append(o *Resources) {
	dst, src := reflect.ValueOf(r).Elem(), reflect.ValueOf(o).Elem()
	for i := range dst.NumField() {
		if src.Field(i).Len() > 0 {
			dst.Field(i).Set(reflect.AppendSlice(dst.Field(i), src.Field(i)))
		}
	}
}

// copyPointed is copyAll for a list held by pointer.
func copyPointed[T any](in []*T, deepCopy func(*T) *T) []*T {
	if in == nil {
		return nil
	}
	out := make([]*T, len(in))
	for i, v := range in {
		out[i] = deepCopy(v)
	}
	return out
}

// PointersTo returns a pointer to each of items, in order: the Backends or HTTPRoutes of
// a list (a BackendList's Items, a YAML file's) as Resources holds them.
func PointersTo[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
