package controllers

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// The Envoy pods of a Gateway accept connections on their listener ports only from the
// namespaces whose callers the Gateway serves (every namespace when it does not isolate
// tenants), and on the readiness and metrics ports from anywhere (the kubelet probes
// from the node, Prometheus from wherever it runs). Envoy's admin port listens on
// 127.0.0.1 and is never allowed. Isolation already refuses other callers with a 403;
// the policy keeps them from opening a connection at all, where the network plugin
// enforces policies.

// EnvoyIngressPolicyName is the name of a Gateway's Envoy ingress NetworkPolicy.
func EnvoyIngressPolicyName(gateway string) string { return infra.ResourceName(gateway) + "-ingress" }

// writeEnvoyIngress creates or updates a Gateway's Envoy ingress policy (in a cluster).
func (r *Reconciler) writeEnvoyIngress(ctx context.Context, gw ir.Gateway, obj *gwapiv1.Gateway) error {
	if r.opts.EnvoyEgress == nil || obj == nil {
		return nil
	}
	return r.writeEnvoyPolicy(ctx, obj, EnvoyIngressPolicyName(obj.Name), fixedSpec(envoyIngressSpec(gw)))
}

// envoyIngressSpec is the ingress policy of one Gateway's Envoy pods.
func envoyIngressSpec(gw ir.Gateway) networkingv1.NetworkPolicySpec {
	ns, name, _ := strings.Cut(gw.Name, "/")
	spec := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: infra.SelectorLabels(ns, name)},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: tcpPorts(bootstrap.PodReadinessPort, bootstrap.PodMetricsPort),
		}},
	}
	if from, ok := callerNamespaces(gw); ok {
		spec.Ingress = append(spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: from, Ports: tcpPorts(envoyListenerPorts([]ir.Gateway{gw})...)})
	}
	return spec
}

// callerNamespaces are the peers allowed to reach the listeners: every source (no
// peer) when some listener does not isolate — as before isolation, callers outside the
// pod network included —, else the namespaces that have a route table; false when there
// is none (or no listener).
func callerNamespaces(gw ir.Gateway) ([]networkingv1.NetworkPolicyPeer, bool) {
	set := map[string]bool{}
	for _, l := range gw.Listeners {
		if !l.Isolated {
			return nil, true
		}
		for _, t := range l.Tenants {
			set[t.Namespace] = true
		}
	}
	if len(set) == 0 {
		return nil, false
	}
	names := make([]string, 0, len(set))
	for ns := range set {
		names = append(names, ns)
	}
	sort.Strings(names)
	return []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: names,
	}}}}}, true
}

func tcpPorts(ports ...int32) []networkingv1.NetworkPolicyPort {
	tcp := corev1.ProtocolTCP
	out := make([]networkingv1.NetworkPolicyPort, 0, len(ports))
	for _, p := range ports {
		port := intstr.FromInt32(p)
		out = append(out, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &port})
	}
	return out
}
