package infra

import "maps"

// LabelGatewayAPIName is the label Gateway API (GEP-1762) asks implementations to put
// on the resources they make for a Gateway, with the Gateway's name.
const LabelGatewayAPIName = "gateway.networking.k8s.io/gateway-name"

// labelsOf are the labels of every object made for gw, its Envoy pods included:
// spec.infrastructure's (GEP-1867 asks for them on the pods), then Portcullis' own and
// Gateway API's gateway-name label, which win a clash. The latter is not among Labels,
// which decide what Portcullis owns: objects made before it existed stay ours. Every
// selector Portcullis writes (the Deployment, the Service, the lockdown, the Envoy
// ingress and egress NetworkPolicies) names only keys set here by Portcullis, and a
// value a Gateway gives one of those keys is overwritten, so spec.infrastructure can
// neither make another Gateway's policies select these pods nor drop them from their own.
func labelsOf(gw Gateway) map[string]string {
	l := maps.Clone(gw.Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, Labels(gw.Namespace, gw.Name))
	l[LabelGatewayAPIName] = LabelValue(gw.Name)
	return l
}

// objectAnnotations are spec.infrastructure.annotations (nil when there are none);
// Portcullis sets no annotation on these objects; the pods get these and its own
// (podAnnotations).
func objectAnnotations(gw Gateway) map[string]string { return maps.Clone(gw.Annotations) }

// podAnnotations are spec.infrastructure.annotations and Portcullis' own (scrape hints,
// configuration hashes), which win a clash.
func podAnnotations(gw Gateway, own map[string]string) map[string]string {
	out := maps.Clone(gw.Annotations)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, own)
	return out
}
