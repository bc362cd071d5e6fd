package translate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// unattachedRefStatus says whether the backendRefs of a route that attaches to no
// listener of a parent resolve: kind, ReferenceGrant and existence of the object named.
// Gateway API reports ResolvedRefs for every parent, attached or not, so a user reading
// a NotAllowedByListeners route still learns whether its references are sound. Unlike
// routeBackends it builds nothing: a route that is not attached must not put a cluster
// into Envoy or mark a Backend as used. Whether each target exists is noted for the
// Gateway's route side (route_side.go).
func (t *translator) unattachedRefStatus(g *gatewayContext, r *gwapiv1.HTTPRoute) refStatus {
	var st refStatus
	for i, rule := range r.Spec.Rules {
		for j, ref := range rule.BackendRefs {
			target, kind, rerr := t.backendRefTarget("HTTPRoute", r.Namespace, ref.BackendObjectReference)
			if rerr == nil {
				rerr = t.checkRefExists(target, kind)
				g.record.noteExists(target, kind, rerr == nil)
			}
			if rerr != nil {
				st.fail(rerr.reason, fmt.Sprintf("rules[%d].backendRefs[%d]: %s", i, j, rerr.msg))
			}
		}
	}
	return st
}

func (t *translator) checkRefExists(target types.NamespacedName, kind targetKind) *refError {
	switch kind {
	case targetService:
		if _, ok := t.services[target]; !ok {
			return newRefError(string(gwapiv1.RouteReasonBackendNotFound), "Service %s not found", target)
		}
		return nil
	case targetXBackend:
		if _, ok := t.xbackends[target]; !ok {
			return newRefError(string(gwapiv1.RouteReasonBackendNotFound), "XBackend %s not found", target)
		}
		return nil
	}
	if _, ok := t.backends[target]; !ok {
		return newRefError(string(gwapiv1.RouteReasonBackendNotFound), "Backend %s not found", target)
	}
	return nil
}
