package controllers

import (
	"testing"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// The NetworkPolicies Portcullis writes are checked with an independent evaluator
// (cyclonus' matcher, which implements the NetworkPolicy spec), not with our own reading
// of it: a shared, isolated Gateway edge/egress whose only tenant is team-a, team-a and
// team-b both locked down, the Gateway's Envoy egress and ingress policies.
func TestPolicySemantics(t *testing.T) {
	gw := ir.Gateway{
		Name:      "edge/egress",
		Listeners: []ir.Listener{{Name: "http-10080", Port: 10080, Isolated: true, Tenants: []ir.Tenant{{Namespace: "team-a"}}}},
		Clusters:  []*ir.Cluster{{Name: "backend/team-a/api/https", Endpoints: []ir.Endpoint{{Address: "203.0.113.10", Port: 443}}}},
	}
	obj := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "egress"}}
	opts := EnvoyEgress{ManagerNamespace: "portcullis-system", ManagerPodLabels: map[string]string{"app": "portcullis"}, XDSPort: 18000}
	policies := []*networkingv1.NetworkPolicy{
		policyIn("team-a", lockdownSpec([]ir.Gateway{gw})),
		policyIn("team-b", lockdownSpec([]ir.Gateway{gw})),
		policyIn("edge", envoyEgressSpec(opts, obj, endpointsOf(gw))),
		policyIn("edge", envoyIngressSpec(gw)),
	}
	eval := matcher.BuildNetworkPolicies(false, policies)

	envoy := pod("edge", infra.SelectorLabels("edge", "egress"))
	lookAlike := pod("mallory", infra.SelectorLabels("edge", "egress"))
	teamA, teamB, free := pod("team-a", map[string]string{"app": "client"}), pod("team-b", map[string]string{"app": "client"}), pod("free", nil)
	dns := pod("kube-system", map[string]string{"k8s-app": "kube-dns"})
	manager := pod("portcullis-system", map[string]string{"app": "portcullis"})
	tests := []struct {
		name     string
		from, to *matcher.TrafficPeer
		port     int
		protocol corev1.Protocol
		allowed  bool
	}{
		{"a locked pod may not go out directly", teamA, external("8.8.8.8"), 443, corev1.ProtocolTCP, false},
		{"a locked pod reaches its Gateway's Envoy listener", teamA, envoy, 10080, corev1.ProtocolTCP, true},
		{"a locked pod may not reach another port of the Envoy pod", teamA, envoy, 8080, corev1.ProtocolTCP, false},
		{"a look-alike Envoy pod in another namespace is no way out", teamA, lookAlike, 10080, corev1.ProtocolTCP, false},
		{"a locked pod queries cluster DNS", teamA, dns, 53, corev1.ProtocolUDP, true},
		{"a namespace the isolated Gateway does not serve cannot connect to it", teamB, envoy, 10080, corev1.ProtocolTCP, false},
		{"an unlocked namespace the Gateway does not serve cannot connect to it either", free, envoy, 10080, corev1.ProtocolTCP, false},
		{"Envoy's admin port is never reachable", teamA, envoy, int(bootstrap.PodAdminPort), corev1.ProtocolTCP, false},
		{"the kubelet's readiness probe reaches Envoy", external("10.200.0.1"), envoy, int(bootstrap.PodReadinessPort), corev1.ProtocolTCP, true},
		{"Envoy reaches a vetted address on its port", envoy, external("203.0.113.10"), 443, corev1.ProtocolTCP, true},
		{"Envoy may not reach a vetted address on another port", envoy, external("203.0.113.10"), 80, corev1.ProtocolTCP, false},
		{"Envoy may not reach a private address", envoy, external("10.0.0.5"), 443, corev1.ProtocolTCP, false},
		{"Envoy may not reach the metadata service", envoy, external("169.254.169.254"), 80, corev1.ProtocolTCP, false},
		{"Envoy reaches the xDS server", envoy, manager, 18000, corev1.ProtocolTCP, true},
	}
	shared := gw
	shared.Name = "edge/shared"
	shared.Listeners = []ir.Listener{{Name: "http-10080", Port: 10080}}
	sharedEnvoy := pod("edge", infra.SelectorLabels("edge", "shared"))
	eval = matcher.BuildNetworkPolicies(false, append(policies, policyIn("edge", envoyIngressSpec(shared))))
	tests = append(tests, []struct {
		name     string
		from, to *matcher.TrafficPeer
		port     int
		protocol corev1.Protocol
		allowed  bool
	}{
		{"with isolation off any namespace reaches the listener", free, sharedEnvoy, 10080, corev1.ProtocolTCP, true},
		{"with isolation off a caller outside the pod network reaches the listener", external("10.200.0.1"), sharedEnvoy, 10080, corev1.ProtocolTCP, true},
		{"with isolation off the admin port stays closed", free, sharedEnvoy, int(bootstrap.PodAdminPort), corev1.ProtocolTCP, false},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := eval.IsTrafficAllowed(&matcher.Traffic{Source: tc.from, Destination: tc.to, ResolvedPort: tc.port, Protocol: tc.protocol}).IsAllowed()
			if got != tc.allowed {
				t.Errorf("allowed = %v, want %v", got, tc.allowed)
			}
		})
	}
}

func policyIn(ns string, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: spec}
}

// pod is a pod in a namespace whose only label is the one the API server sets.
func pod(ns string, labels map[string]string) *matcher.TrafficPeer {
	return &matcher.TrafficPeer{IP: "10.244.0.99", Internal: &matcher.InternalPeer{
		Namespace: ns, PodLabels: labels, NamespaceLabels: map[string]string{corev1.LabelMetadataName: ns},
	}}
}

func external(ip string) *matcher.TrafficPeer { return &matcher.TrafficPeer{IP: ip} }
