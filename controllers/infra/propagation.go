package infra

import "maps"

// LabelGatewayAPIName is the label Gateway API (GEP-1762) asks implementations to put
// on the resources they make for a Gateway, with the Gateway's name.
const LabelGatewayAPIName = "gateway.networking.k8s.io/gateway-name"

// objectLabels are the labels of every object made for gw (not its pods, see podLabels): the Gateway's
// spec.infrastructure.labels, then Portcullis' own, which win a clash (the Deployment's
// selector, the Service and the NetworkPolicies find Envoy pods by them), and Gateway
// API's gateway-name label. The latter is not among Labels, which decide what
// Portcullis owns: objects made before it existed stay ours.
func objectLabels(gw Gateway) map[string]string {
	out := maps.Clone(gw.Labels)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, podLabels(gw))
	return out
}

// podLabels are the Envoy pods' labels: Portcullis' own and the gateway-name label,
// never spec.infrastructure's.
func podLabels(gw Gateway) map[string]string {
	l := Labels(gw.Namespace, gw.Name)
	l[LabelGatewayAPIName] = LabelValue(gw.Name)
	return l
}

// objectAnnotations are spec.infrastructure.annotations (nil when there are none);
// Portcullis sets no annotation on these objects, only on the pods.
func objectAnnotations(gw Gateway) map[string]string { return maps.Clone(gw.Annotations) }
