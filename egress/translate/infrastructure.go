package translate

import (
	"fmt"
	"sort"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// podAlteringDomains are label and annotation key domains that make some other system
// change a pod they appear on: attach it to another network (Multus, Calico, OVN), inject
// a sidecar proxy that routes its traffic (Istio, Linkerd, Kuma, Consul), or pick its
// address. spec.infrastructure reaches the Envoy pods, whose egress the Envoy
// NetworkPolicy confines; any of these could take the pods around that policy, so a
// Gateway naming one is refused. Portcullis' own domain is refused too: its labels
// select the pods for every policy and would be overwritten anyway.
var podAlteringDomains = []string{
	"portcullis.io",
	"k8s.v1.cni.cncf.io", "v1.multus-cni.io", "cni.projectcalico.org", "ovn.kubernetes.io",
	"istio.io", "linkerd.io", "kuma.io", "consul.hashicorp.com",
}

// podAlteringKeys are single keys with the same effect outside those domains.
var podAlteringKeys = map[string]bool{"istio-injection": true}

// RefusedInfrastructureKey tells why a spec.infrastructure label or annotation key may
// not reach the Envoy pods, or returns "" when it may.
func RefusedInfrastructureKey(key string) string {
	if podAlteringKeys[key] {
		return "it changes how the pod's traffic is handled"
	}
	prefix, _, found := strings.Cut(key, "/")
	if !found {
		return ""
	}
	for _, d := range podAlteringDomains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			if d == "portcullis.io" {
				return "the portcullis.io domain is Portcullis' own"
			}
			return "it would let " + d + " change the Envoy pods' network or add a proxy around their egress policy"
		}
	}
	return ""
}

// infrastructureProblem names the first refused key of spec.infrastructure, in a stable
// order, or returns "".
func infrastructureProblem(infra *gwapiv1.GatewayInfrastructure) string {
	if infra == nil {
		return ""
	}
	check := func(field string, keys []string) string {
		sort.Strings(keys)
		for _, k := range keys {
			if why := RefusedInfrastructureKey(k); why != "" {
				return fmt.Sprintf("spec.infrastructure.%s[%s] is refused: %s; remove it", field, k, why)
			}
		}
		return ""
	}
	labels := make([]string, 0, len(infra.Labels))
	for k := range infra.Labels {
		labels = append(labels, string(k))
	}
	annotations := make([]string, 0, len(infra.Annotations))
	for k := range infra.Annotations {
		annotations = append(annotations, string(k))
	}
	if p := check("labels", labels); p != "" {
		return p
	}
	return check("annotations", annotations)
}
