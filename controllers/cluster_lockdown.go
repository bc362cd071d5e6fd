package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// Namespaced NetworkPolicies add up: a tenant allowed to write one (the standard edit
// role is) can allow all egress beside the lockdown policy. Where the cluster serves the
// cluster-scoped ClusterNetworkPolicy of sigs.k8s.io/network-policy-api (v1alpha2, from
// v0.2.0), the manager also writes one in the Admin tier, which every CNI implementing
// it evaluates before any NetworkPolicy: locked namespaces may reach their Gateways'
// Envoy pods on listener ports and cluster DNS, and everything else is denied, whatever
// NetworkPolicy a tenant adds. Without the API the lockdown stays the NetworkPolicy
// alone (lockdown.go).

// ClusterLockdownName is the ClusterNetworkPolicy the manager keeps.
const ClusterLockdownName = "portcullis-egress-lockdown"

// clusterLockdownPriority places the policy in the Admin tier: lower values are
// evaluated first (0-1000); 100 leaves room for a platform's own policies before it.
const clusterLockdownPriority = 100

// clusterPolicyGVK is the cluster network policy API the manager writes.
var clusterPolicyGVK = schema.GroupVersionKind{Group: "policy.networking.k8s.io", Version: "v1alpha2", Kind: "ClusterNetworkPolicy"}

// clusterPolicyRecheck is how long the manager trusts "the API is not served" before it
// asks discovery again: the CRD may be installed after the manager started.
const clusterPolicyRecheck = time.Minute

// maxPortsPerRule is the API's limit of protocols in one rule.
const maxPortsPerRule = 25

// +kubebuilder:rbac:groups=policy.networking.k8s.io,resources=clusternetworkpolicies,verbs=get;list;watch;create;update;patch;delete

// syncClusterLockdown keeps the ClusterNetworkPolicy when the API is served: present
// while some namespace is locked down, deleted otherwise.
func (r *Reconciler) syncClusterLockdown(ctx context.Context, locked bool, gateways []ir.Gateway) error {
	if !r.clusterPolicyServed() {
		return nil
	}
	if !locked {
		return r.removeClusterLockdown(ctx)
	}
	want := clusterLockdown(gateways)
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(clusterPolicyGVK)
	err := r.client.Get(ctx, client.ObjectKey{Name: ClusterLockdownName}, have)
	if meta.IsNoMatchError(err) { // the CRD went away
		r.clusterPolicy.served = false
		return nil
	}
	if apierrors.IsNotFound(err) {
		return r.client.Create(ctx, want)
	}
	if err != nil {
		return fmt.Errorf("reading ClusterNetworkPolicy %s: %w", ClusterLockdownName, err)
	}
	if have.GetLabels()[managedByLabel] != managedBy {
		return fmt.Errorf("ClusterNetworkPolicy %s exists and is not managed by Portcullis; it is left alone", ClusterLockdownName)
	}
	if equalSpec(have, want) {
		return nil
	}
	want.SetResourceVersion(have.GetResourceVersion())
	return r.client.Update(ctx, want)
}

func equalSpec(a, b *unstructured.Unstructured) bool {
	x, _, _ := unstructured.NestedMap(a.Object, "spec")
	y, _, _ := unstructured.NestedMap(b.Object, "spec")
	return fmt.Sprint(x) == fmt.Sprint(y)
}

func (r *Reconciler) removeClusterLockdown(ctx context.Context) error {
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(clusterPolicyGVK)
	err := r.client.Get(ctx, client.ObjectKey{Name: ClusterLockdownName}, have)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || have.GetLabels()[managedByLabel] != managedBy {
		return err
	}
	return client.IgnoreNotFound(r.client.Delete(ctx, have))
}

// clusterPolicyServed asks discovery (through the client's REST mapper) whether the
// cluster serves ClusterNetworkPolicy; a negative answer is trusted for
// clusterPolicyRecheck.
func (r *Reconciler) clusterPolicyServed() bool {
	now := r.opts.Clock()
	if r.clusterPolicy.served || now.Sub(r.clusterPolicy.checked) < clusterPolicyRecheck && !r.clusterPolicy.checked.IsZero() {
		return r.clusterPolicy.served
	}
	r.clusterPolicy.checked = now
	_, err := r.client.RESTMapper().RESTMapping(clusterPolicyGVK.GroupKind(), clusterPolicyGVK.Version)
	r.clusterPolicy.served = err == nil
	if err != nil && !meta.IsNoMatchError(err) {
		r.log.Error(err, "discovering the ClusterNetworkPolicy API")
	}
	return r.clusterPolicy.served
}

// clusterLockdown is the policy: for pods of namespaces labelled for lockdown, accept
// egress to the Envoy pods of the Gateways (in their own namespaces, by the labels only
// the provider sets) on listener ports, accept cluster DNS, deny everything else.
func clusterLockdown(gateways []ir.Gateway) *unstructured.Unstructured {
	var rules []any
	ports := envoyListenerPorts(gateways)
	envoys := envoyPodsPeer(gateways)
	for chunk := range slices.Chunk(ports, maxPortsPerRule) {
		var protocols []any
		for _, p := range chunk {
			protocols = append(protocols, map[string]any{"tcp": map[string]any{"destinationPort": map[string]any{"number": int64(p)}}})
		}
		rules = append(rules, map[string]any{"name": "to-gateways", "action": "Accept", "to": []any{envoys}, "protocols": protocols})
	}
	rules = append(rules,
		map[string]any{"name": "to-cluster-dns", "action": "Accept",
			"to": []any{map[string]any{"pods": map[string]any{
				"namespaceSelector": matchLabels(clusterDNSPeer.NamespaceSelector.MatchLabels),
				"podSelector":       matchLabels(clusterDNSPeer.PodSelector.MatchLabels)}}},
			"protocols": []any{
				map[string]any{"udp": map[string]any{"destinationPort": map[string]any{"number": int64(53)}}},
				map[string]any{"tcp": map[string]any{"destinationPort": map[string]any{"number": int64(53)}}}}},
		map[string]any{"name": "deny-everything-else", "action": "Deny",
			"to": []any{map[string]any{"networks": []any{"0.0.0.0/0", "::/0"}}, map[string]any{"namespaces": map[string]any{}}}},
	)
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"tier":     "Admin",
			"priority": int64(clusterLockdownPriority),
			"subject":  map[string]any{"namespaces": matchLabels(map[string]string{LockdownLabel: "true"})},
			"egress":   rules,
		},
	}}
	u.SetGroupVersionKind(clusterPolicyGVK)
	u.SetName(ClusterLockdownName)
	u.SetLabels(map[string]string{managedByLabel: managedBy})
	return u
}

// envoyPodsPeer selects the Envoy pods of every Gateway, in the Gateways' namespaces
// only (kubernetes.io/metadata.name, which only the API server sets).
func envoyPodsPeer(gateways []ir.Gateway) map[string]any {
	var namespaces []any
	seen := map[string]bool{}
	for _, gw := range gateways {
		ns, _, _ := strings.Cut(gw.Name, "/")
		if !seen[ns] {
			seen[ns] = true
			namespaces = append(namespaces, ns)
		}
	}
	slices.SortFunc(namespaces, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	return map[string]any{"pods": map[string]any{
		"namespaceSelector": map[string]any{"matchExpressions": []any{map[string]any{
			"key": corev1.LabelMetadataName, "operator": "In", "values": namespaces}}},
		"podSelector": matchLabels(map[string]string{infra.LabelName: infra.LabelNameValue}),
	}}
}

func matchLabels(labels map[string]string) map[string]any {
	m := map[string]any{}
	for k, v := range labels {
		m[k] = v
	}
	return map[string]any{"matchLabels": m}
}
