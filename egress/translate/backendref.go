package translate

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// ReasonInvalidBackend is the HTTPRoute ResolvedRefs reason for a Backend that exists but
// cannot be used (not Accepted, unresolved TLS references, or no such port); the Backend's
// own status says why.
const ReasonInvalidBackend = "InvalidBackend"

// refStatus is the first backendRef problem of a route, for its ResolvedRefs condition.
type refStatus struct {
	reason, msg string
}

func (s *refStatus) fail(reason, msg string) {
	if s.reason == "" {
		s.reason, s.msg = reason, msg
	}
}

func (s refStatus) condition(gen int64) metav1.Condition {
	if s.reason == "" {
		return condition(string(gwapiv1.RouteConditionResolvedRefs), true, string(gwapiv1.RouteReasonResolvedRefs), "all backendRefs resolved", gen)
	}
	return condition(string(gwapiv1.RouteConditionResolvedRefs), false, s.reason, s.msg, gen)
}

// routeBackends resolves a rule's backendRefs into weighted clusters. An invalid ref's
// weight becomes InvalidWeight (those requests get 500); a rule with no backendRefs and no
// redirect answers 500 as well, since nothing could serve it, with a body naming why.
func (t *translator) routeBackends(g *gatewayContext, r *gwapiv1.HTTPRoute, ruleIdx int, rule gwapiv1.HTTPRouteRule, out *ir.Route, st *refStatus) error {
	if out.Redirect != nil {
		return nil
	}
	var firstProblem string // the reason of the rule's first invalid ref
	for i, ref := range rule.BackendRefs {
		weight := uint32(1)
		if ref.Weight != nil {
			weight = uint32(*ref.Weight)
		}
		if weight == 0 {
			continue
		}
		wc, err := t.resolveBackendRef(g, r.Namespace, ref.BackendObjectReference)
		if err != nil {
			st.fail(err.reason, fmt.Sprintf("rules[%d].backendRefs[%d]: %s", ruleIdx, i, err.msg))
			out.InvalidWeight += weight
			if firstProblem == "" {
				firstProblem = err.reason
			}
			continue
		}
		wc.Weight = weight
		for j, f := range ref.Filters {
			if f.Type != gwapiv1.HTTPRouteFilterRequestHeaderModifier {
				return fmt.Errorf("rules[%d].backendRefs[%d].filters: type %s is not supported on a backendRef; only RequestHeaderModifier is", ruleIdx, i, f.Type)
			}
			wc.RequestHeaders = headerMutation(f.RequestHeaderModifier)
			if err := checkHeaderMutation(wc.RequestHeaders); err != nil {
				return fmt.Errorf("rules[%d].backendRefs[%d].filters[%d].requestHeaderModifier.%v", ruleIdx, i, j, err)
			}
		}
		out.Backends = append(out.Backends, wc)
	}
	if len(out.Backends) == 0 {
		// The body says why in one line, by the reason's name (the route's ResolvedRefs
		// has the details): a client reading it need not guess whose 500 it is.
		out.DirectResponse = &ir.DirectResponse{StatusCode: 500, Body: ir.BackendUnavailable + ": " + unavailableKind(rule, firstProblem) + "\n"}
		out.InvalidWeight = 0
	}
	return nil
}

// unavailableKind says why no backendRef of a rule can take its traffic.
func unavailableKind(rule gwapiv1.HTTPRouteRule, firstProblem string) string {
	switch {
	case firstProblem != "":
		return firstProblem
	case len(rule.BackendRefs) == 0:
		return "no backendRefs"
	}
	return "every backendRef has weight 0"
}

// resolveBackendRef finds the cluster for one backendRef of an HTTPRoute in namespace
// ns, adding it (and its secrets) to the Gateway. What it resolved to is noted for the
// Gateway's route side (route_side.go).
func (t *translator) resolveBackendRef(g *gatewayContext, ns string, ref gwapiv1.BackendObjectReference) (ir.WeightedCluster, *refError) {
	wc, rerr := t.resolveBackendTarget(g, ns, ref)
	g.record.noteRef(ns, ref, wc.Cluster, rerr)
	return wc, rerr
}

func (t *translator) resolveBackendTarget(g *gatewayContext, ns string, ref gwapiv1.BackendObjectReference) (ir.WeightedCluster, *refError) {
	target, kind, rerr := t.backendRefTarget("HTTPRoute", ns, ref)
	if rerr != nil {
		return ir.WeightedCluster{}, rerr
	}
	var cluster *ir.Cluster
	var secrets []ir.Secret
	switch kind {
	case targetService:
		cluster, secrets, rerr = t.serviceRef(g, target, ref.Port)
	case targetXBackend:
		cluster, secrets, rerr = t.xbackendRef(g, target, ref.Port)
	default:
		cluster, secrets, rerr = t.backendRef(g, target, ref.Port)
	}
	if rerr != nil {
		return ir.WeightedCluster{}, rerr
	}
	cluster, secrets = g.withClientCertificate(cluster, secrets)
	g.clusters[cluster.Name] = cluster
	for _, s := range secrets {
		g.secrets[s.Name] = s
	}
	return ir.WeightedCluster{Cluster: cluster.Name}, nil
}

// targetKind is the kind of object a backendRef names.
type targetKind int

const (
	targetBackend targetKind = iota
	targetService
	targetXBackend
)

// backendRefTarget checks a backendRef's kind and, across namespaces, its ReferenceGrant,
// and returns the object it names and its kind. fromKind and fromNS are the kind and
// namespace of the route that holds the ref.
func (t *translator) backendRefTarget(fromKind, fromNS string, ref gwapiv1.BackendObjectReference) (types.NamespacedName, targetKind, *refError) {
	group, kind, ns := "", "Service", fromNS
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	target := types.NamespacedName{Namespace: ns, Name: string(ref.Name)}
	var tk targetKind
	switch {
	case group == "" && kind == "Service":
		tk = targetService
	case group == egressv1alpha1.GroupVersion.Group && kind == egressv1alpha1.BackendKind:
		tk = targetBackend
	case group == gwapixv1alpha1.GroupName && kind == XBackendKind:
		tk = targetXBackend
	default:
		return target, tk, newRefError(string(gwapiv1.RouteReasonInvalidKind), "kind %s/%s is not supported; use a Service, an %s Backend or a %s XBackend", group, kind, egressv1alpha1.GroupVersion.Group, gwapixv1alpha1.GroupName)
	}
	if !t.refAllowed(crossRef{gwapiv1.GroupName, fromKind, fromNS, group, kind, ns, target.Name}) {
		return target, tk, newRefError(string(gwapiv1.RouteReasonRefNotPermitted), "%s %s is in another namespace and no ReferenceGrant allows it", kind, target)
	}
	return target, tk, nil
}
