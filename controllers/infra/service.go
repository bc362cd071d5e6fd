package infra

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// service exposes each public port once, mapped to the Envoy port (80 -> 10080).
func (k *Kubernetes) service(gw Gateway) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(ResourceName(gw.Name), gw.Namespace).
		WithLabels(labelsOf(gw)).
		WithAnnotations(objectAnnotations(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(k.opts.ServiceType).
			WithSelector(SelectorLabels(gw.Namespace, gw.Name)).
			WithPorts(servicePorts(gw)...))
}

// servicePorts names each port "port-<public port>": Gateway listener names may be
// longer than a port name may be, and several listeners may share a port.
func servicePorts(gw Gateway) []*corev1ac.ServicePortApplyConfiguration {
	envoyPort := map[int32]uint32{}
	for _, l := range gw.Listeners {
		envoyPort[l.Port] = l.EnvoyPort
	}
	var public []int32
	for p := range envoyPort {
		public = append(public, p)
	}
	slices.Sort(public)
	var out []*corev1ac.ServicePortApplyConfiguration
	for _, p := range public {
		out = append(out, corev1ac.ServicePort().
			WithName(fmt.Sprintf("port-%d", p)).
			WithProtocol(corev1.ProtocolTCP).
			WithPort(p).
			WithTargetPort(intstr.FromInt32(int32(envoyPort[p]))))
	}
	return out
}

// serviceAddresses are the Service's cluster IPs (all families), or its DNS name when
// it has none.
func serviceAddresses(svc *corev1ac.ServiceApplyConfiguration, name, namespace string) []gwapiv1.GatewayStatusAddress {
	var out []gwapiv1.GatewayStatusAddress
	if svc.Spec != nil {
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != nil {
			ips = []string{*svc.Spec.ClusterIP}
		}
		for _, ip := range ips {
			if ip != "" && ip != corev1.ClusterIPNone {
				out = append(out, gwapiv1.GatewayStatusAddress{Type: addressType(gwapiv1.IPAddressType), Value: ip})
			}
		}
	}
	if len(out) == 0 {
		out = append(out, gwapiv1.GatewayStatusAddress{
			Type:  addressType(gwapiv1.HostnameAddressType),
			Value: name + "." + namespace + ".svc",
		})
	}
	return out
}
