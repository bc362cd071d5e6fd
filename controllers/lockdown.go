package controllers

import (
	"context"
	"errors"
	"sort"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/ir"
)

const (
	// LockdownLabel on a namespace makes its pods' only way out the gateway (and DNS).
	LockdownLabel = "egress.portcullis.io/lockdown"
	// LockdownPolicyName is the NetworkPolicy the manager keeps in a locked-down namespace.
	LockdownPolicyName = "portcullis-egress-lockdown"
	// managedByLabel marks objects the manager owns, so it never touches a user's policy.
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "portcullis"
)

// envoyPodLabels select the Envoy pods of every Portcullis Gateway.
var envoyPodLabels = map[string]string{"app.kubernetes.io/name": "portcullis-envoy"}

// clusterDNSPeer is the cluster's DNS pods, which locked-down pods may still query.
var clusterDNSPeer = networkingv1.NetworkPolicyPeer{
	NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}},
	PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
}

// syncLockdown keeps the lockdown NetworkPolicy in every labelled namespace (egress only
// to the Envoy pods on their listener ports and to cluster DNS) and removes it from
// namespaces that lost the label.
func (r *Reconciler) syncLockdown(ctx context.Context, res *egress.Resources, gateways []ir.Gateway) error {
	ports := envoyListenerPorts(gateways)
	var errs []error
	for i := range res.Namespaces {
		ns := &res.Namespaces[i]
		if ns.Labels[LockdownLabel] == "true" {
			errs = append(errs, r.ensureLockdown(ctx, ns.Name, ports))
		} else {
			errs = append(errs, r.removeLockdown(ctx, ns.Name))
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) ensureLockdown(ctx context.Context, namespace string, ports []int32) error {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: LockdownPolicyName, Namespace: namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.client, np, func() error {
		if np.Labels == nil {
			np.Labels = map[string]string{}
		}
		np.Labels[managedByLabel] = managedBy
		np.Spec = lockdownSpec(ports)
		return nil
	})
	return err
}

func (r *Reconciler) removeLockdown(ctx context.Context, namespace string) error {
	np := &networkingv1.NetworkPolicy{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: LockdownPolicyName}, np)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || np.Labels[managedByLabel] != managedBy {
		return err
	}
	return client.IgnoreNotFound(r.client.Delete(ctx, np))
}

// lockdownSpec allows every pod of the namespace egress to the Envoy pods on the given
// ports and to cluster DNS, and nothing else. With no Gateway yet, only DNS is allowed:
// fail closed.
func lockdownSpec(ports []int32) networkingv1.NetworkPolicySpec {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	dns := intstr.FromInt32(53)
	spec := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		Egress: []networkingv1.NetworkPolicyEgressRule{{
			To:    []networkingv1.NetworkPolicyPeer{clusterDNSPeer},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
		}},
	}
	if len(ports) == 0 {
		return spec
	}
	rule := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{},
		PodSelector:       &metav1.LabelSelector{MatchLabels: envoyPodLabels},
	}}}
	for _, p := range ports {
		port := intstr.FromInt32(p)
		rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &port})
	}
	spec.Egress = append([]networkingv1.NetworkPolicyEgressRule{rule}, spec.Egress...)
	return spec
}

// envoyListenerPorts are the ports Envoy binds for every Gateway: NetworkPolicies match
// pod ports, not Service ports.
func envoyListenerPorts(gateways []ir.Gateway) []int32 {
	set := map[int32]bool{}
	for _, gw := range gateways {
		for _, l := range gw.Listeners {
			set[int32(l.Port)] = true
		}
	}
	out := make([]int32, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
