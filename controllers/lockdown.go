package controllers

import (
	"context"
	"errors"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/portcullis-io/portcullis/controllers/infra"
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

// clusterDNSPeer is the cluster's DNS pods, which locked-down pods may still query.
var clusterDNSPeer = networkingv1.NetworkPolicyPeer{
	NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}},
	PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
}

// syncLockdown keeps the lockdown NetworkPolicy in every labelled namespace (egress only
// to the Envoy pods on their listener ports and to cluster DNS) and removes it from
// namespaces that lost the label; and the ClusterNetworkPolicy where the cluster serves
// it (cluster_lockdown.go).
func (r *Reconciler) syncLockdown(ctx context.Context, res *egress.Resources, gateways []ir.Gateway) error {
	var errs []error
	locked := false
	for i := range res.Namespaces {
		ns := &res.Namespaces[i]
		if ns.Labels[LockdownLabel] == "true" {
			locked = true
			errs = append(errs, r.ensureLockdown(ctx, ns.Name, gateways))
		} else {
			errs = append(errs, r.removeLockdown(ctx, ns.Name))
		}
	}
	errs = append(errs, r.syncClusterLockdown(ctx, locked, gateways))
	return errors.Join(errs...)
}

func (r *Reconciler) ensureLockdown(ctx context.Context, namespace string, gateways []ir.Gateway) error {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: LockdownPolicyName, Namespace: namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.client, np, func() error {
		if np.Labels == nil {
			np.Labels = map[string]string{}
		}
		np.Labels[managedByLabel] = managedBy
		np.Spec = lockdownSpec(gateways)
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

// lockdownSpec allows egress to cluster DNS and, per Gateway, to that Gateway's Envoy
// pods on its listener ports, and nothing else. Each Gateway's pods are selected in the
// Gateway's own namespace (by kubernetes.io/metadata.name, which only the API server
// sets) and by the labels the Kubernetes provider puts on them: a pod that copies those
// labels in any other namespace is no way out.
func lockdownSpec(gateways []ir.Gateway) networkingv1.NetworkPolicySpec {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	dns := intstr.FromInt32(53)
	spec := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
	}
	for _, gw := range gateways {
		ports := envoyListenerPorts([]ir.Gateway{gw})
		if len(ports) == 0 {
			continue
		}
		rule := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{envoyPodsOf(gw.Name)}}
		for _, p := range ports {
			port := intstr.FromInt32(p)
			rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &port})
		}
		spec.Egress = append(spec.Egress, rule)
	}
	spec.Egress = append(spec.Egress, networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{clusterDNSPeer},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
	})
	return spec
}

// envoyPodsOf selects the Envoy pods of one Gateway ("namespace/name"), in its namespace.
func envoyPodsOf(gateway string) networkingv1.NetworkPolicyPeer {
	ns, name, _ := strings.Cut(gateway, "/")
	return networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: infra.SelectorLabels(ns, name)},
	}
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
