package translate

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// resolvedRefsCondition is the Gateway's ResolvedRefs: its own references (the backend
// client certificate), then a summary of its listeners'. It is always written, so a
// problem that is fixed does not linger.
func (g *gatewayContext) resolvedRefsCondition() metav1.Condition {
	typ, gen := string(gwapiv1.GatewayConditionResolvedRefs), g.gw.Generation
	if p := g.clientCertProblem; p != nil {
		return condition(typ, false, p.reason, "spec.tls.backend.clientCertificateRef: "+p.msg, gen)
	}
	var unresolved []string
	for _, l := range g.listeners {
		if l.refProblem != "" {
			unresolved = append(unresolved, string(l.spec.Name))
		}
	}
	if len(unresolved) > 0 {
		return condition(typ, false, string(gwapiv1.GatewayReasonListenersNotResolved),
			"unresolved references in listener(s) "+strings.Join(unresolved, ", ")+"; see status.listeners", gen)
	}
	return condition(typ, true, string(gwapiv1.GatewayReasonResolvedRefs), "all references resolved", gen)
}
