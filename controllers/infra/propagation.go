package infra

import "maps"

// LabelGatewayAPIName is the label Gateway API (GEP-1762) asks implementations to put
// on the resources they make for a Gateway, with the Gateway's name.
const LabelGatewayAPIName = "gateway.networking.k8s.io/gateway-name"

// objectLabels are the labels of every object made for gw: the Gateway's
// spec.infrastructure.labels, then Portcullis' own, which win a clash (the Deployment's
// selector, the Service and the NetworkPolicies find Envoy pods by them), and Gateway
// API's gateway-name label. The latter is not among Labels, which decide what
// Portcullis owns: objects made before it existed stay ours.
func objectLabels(gw Gateway) map[string]string {
	out := maps.Clone(gw.Labels)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, Labels(gw.Namespace, gw.Name))
	out[LabelGatewayAPIName] = LabelValue(gw.Name)
	return out
}

// objectAnnotations are spec.infrastructure.annotations with ours on top (nil when
// neither has any).
func objectAnnotations(gw Gateway, ours map[string]string) map[string]string {
	if len(gw.Annotations) == 0 && len(ours) == 0 {
		return nil
	}
	out := maps.Clone(gw.Annotations)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, ours)
	return out
}
