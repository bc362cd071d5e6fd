package translate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// Statuses are translation's statuses keyed by "namespace/name" (GatewayClasses by name).
// Conditions carry ObservedGeneration but no LastTransitionTime: the status writer keeps
// the previous time unless the status flips.
type Statuses struct {
	GatewayClasses     map[string]*gwapiv1.GatewayClassStatus    `json:"gatewayClasses,omitempty"`
	Gateways           map[string]*gwapiv1.GatewayStatus         `json:"gateways,omitempty"`
	HTTPRoutes         map[string][]gwapiv1.RouteParentStatus    `json:"httpRoutes,omitempty"`
	TLSRoutes          map[string][]gwapiv1.RouteParentStatus    `json:"tlsRoutes,omitempty"`
	TCPRoutes          map[string][]gwapiv1.RouteParentStatus    `json:"tcpRoutes,omitempty"`
	Backends           map[string]*egressv1alpha1.BackendStatus  `json:"backends,omitempty"`
	BackendTLSPolicies map[string][]gwapiv1.PolicyAncestorStatus `json:"backendTLSPolicies,omitempty"`
	// XBackends hold, per XBackend that routes reference, one parent entry per Gateway.
	XBackends map[string]*gwapixv1alpha1.BackendStatus `json:"xBackends,omitempty"`
}

// condition builds a condition for an object of the given generation.
func condition(typ string, ok bool, reason, message string, generation int64) metav1.Condition {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: generation}
}

// setCondition replaces the condition of the same type in conds, or appends it.
func setCondition(conds []metav1.Condition, c metav1.Condition) []metav1.Condition {
	for i := range conds {
		if conds[i].Type == c.Type {
			conds[i] = c
			return conds
		}
	}
	return append(conds, c)
}

// findCondition returns the condition of the given type, or nil.
func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
