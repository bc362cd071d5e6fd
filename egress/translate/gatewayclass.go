package translate

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// translateGatewayClasses accepts every GatewayClass that names our controller. Portcullis
// takes no parameters, so a parametersRef is refused rather than silently ignored.
func (t *translator) translateGatewayClasses() {
	names := make([]string, 0, len(t.classes))
	for name := range t.classes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		gc := t.classes[name]
		if string(gc.Spec.ControllerName) != t.opts.ControllerName {
			continue
		}
		c := condition(string(gwapiv1.GatewayClassConditionStatusAccepted), true,
			string(gwapiv1.GatewayClassReasonAccepted), "Portcullis serves this class", gc.Generation)
		if gc.Spec.ParametersRef != nil {
			c = condition(string(gwapiv1.GatewayClassConditionStatusAccepted), false,
				string(gwapiv1.GatewayClassReasonInvalidParameters),
				"spec.parametersRef is not supported by Portcullis; remove it", gc.Generation)
		}
		t.result.Statuses.GatewayClasses[name] = &gwapiv1.GatewayClassStatus{Conditions: []metav1.Condition{c}, SupportedFeatures: supportedFeatureList()}
	}
}

// classAccepted reports whether the named GatewayClass is ours and accepted.
func (t *translator) classAccepted(name string) bool {
	st, ok := t.result.Statuses.GatewayClasses[name]
	if !ok {
		return false
	}
	c := findCondition(st.Conditions, string(gwapiv1.GatewayClassConditionStatusAccepted))
	return c != nil && c.Status == metav1.ConditionTrue
}

// ourGateways returns the Gateways of accepted Portcullis classes, by namespace/name.
func (t *translator) ourGateways() []*gwapiv1.Gateway {
	var out []*gwapiv1.Gateway
	for _, gw := range t.gateways {
		if t.classAccepted(string(gw.Spec.GatewayClassName)) {
			out = append(out, gw)
		}
	}
	return out
}
