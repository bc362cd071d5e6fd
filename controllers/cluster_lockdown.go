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
// role is) can allow all egress beside the lockdown policy. Where the cluster serves a
// cluster-scoped policy API of sigs.k8s.io/network-policy-api, the manager also writes
// one that every CNI implementing it evaluates before any NetworkPolicy: locked
// namespaces may reach their Gateways' Envoy pods on listener ports and cluster DNS,
// and everything else is denied, whatever NetworkPolicy a tenant adds. Two APIs exist:
// ClusterNetworkPolicy (v1alpha2, from v0.2.0; the Admin tier) and its predecessor
// AdminNetworkPolicy (v1alpha1, v0.1.x), which the CNIs shipping today implement; the
// newer is used when both are served. Without either the lockdown stays the
// NetworkPolicy alone (lockdown.go).

// ClusterLockdownName is the cluster-scoped policy the manager keeps.
const ClusterLockdownName = "portcullis-egress-lockdown"

// clusterLockdownPriority places the policy before others: lower values are evaluated
// first (0-1000); 100 leaves room for a platform's own policies before it.
const clusterLockdownPriority = 100

// clusterPolicyAPI is one cluster network policy API: its kind and the spec of the
// lockdown in it.
type clusterPolicyAPI struct {
	gvk  schema.GroupVersionKind
	spec func(gateways []ir.Gateway) map[string]any
}

// clusterPolicyAPIs are the APIs the manager can write, preferred first.
var clusterPolicyAPIs = []*clusterPolicyAPI{
	{gvk: schema.GroupVersionKind{Group: "policy.networking.k8s.io", Version: "v1alpha2", Kind: "ClusterNetworkPolicy"}, spec: clusterNetworkPolicySpec},
	{gvk: schema.GroupVersionKind{Group: "policy.networking.k8s.io", Version: "v1alpha1", Kind: "AdminNetworkPolicy"}, spec: adminNetworkPolicySpec},
}

// clusterPolicyGVK is ClusterNetworkPolicy's kind.
var clusterPolicyGVK = clusterPolicyAPIs[0].gvk

// clusterPolicyRecheck is how long the manager trusts "the API is not served" before it
// asks discovery again: the CRD may be installed after the manager started.
const clusterPolicyRecheck = time.Minute

// maxPortsPerRule is the API's limit of protocols in one rule.
const maxPortsPerRule = 25

// +kubebuilder:rbac:groups=policy.networking.k8s.io,resources=clusternetworkpolicies;adminnetworkpolicies,verbs=get;list;watch;create;update;patch;delete

// syncClusterLockdown keeps the cluster-scoped policy when an API for it is served:
// present while some namespace is locked down, deleted otherwise.
func (r *Reconciler) syncClusterLockdown(ctx context.Context, locked bool, gateways []ir.Gateway) error {
	api := r.clusterPolicyServed()
	if api == nil {
		return nil
	}
	if !locked {
		return r.removeClusterLockdown(ctx, api)
	}
	want := clusterLockdown(api, gateways)
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(api.gvk)
	err := r.client.Get(ctx, client.ObjectKey{Name: ClusterLockdownName}, have)
	if meta.IsNoMatchError(err) { // the CRD went away
		r.clusterPolicy.api = nil
		return nil
	}
	if apierrors.IsNotFound(err) {
		return r.client.Create(ctx, want)
	}
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", api.gvk.Kind, ClusterLockdownName, err)
	}
	if have.GetLabels()[managedByLabel] != managedBy {
		return fmt.Errorf("%s %s exists and is not managed by Portcullis; it is left alone", api.gvk.Kind, ClusterLockdownName)
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

func (r *Reconciler) removeClusterLockdown(ctx context.Context, api *clusterPolicyAPI) error {
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(api.gvk)
	err := r.client.Get(ctx, client.ObjectKey{Name: ClusterLockdownName}, have)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || have.GetLabels()[managedByLabel] != managedBy {
		return err
	}
	return client.IgnoreNotFound(r.client.Delete(ctx, have))
}

// clusterPolicyServed asks discovery (through the client's REST mapper) which cluster
// policy API the cluster serves, the preferred first; nil for none, an answer trusted
// for clusterPolicyRecheck. A served API is kept until it goes away.
func (r *Reconciler) clusterPolicyServed() *clusterPolicyAPI {
	now := r.opts.Clock()
	if r.clusterPolicy.api != nil || now.Sub(r.clusterPolicy.checked) < clusterPolicyRecheck && !r.clusterPolicy.checked.IsZero() {
		return r.clusterPolicy.api
	}
	r.clusterPolicy.checked = now
	for _, api := range clusterPolicyAPIs {
		_, err := r.client.RESTMapper().RESTMapping(api.gvk.GroupKind(), api.gvk.Version)
		if err == nil {
			r.clusterPolicy.api = api
			return api
		}
		if !meta.IsNoMatchError(err) {
			r.log.Error(err, "discovering the cluster network policy API", "kind", api.gvk.Kind)
		}
	}
	return nil
}

// clusterLockdown is the policy, in the API's terms: for pods of namespaces labelled
// for lockdown, allow egress to the Envoy pods of the Gateways (in their own
// namespaces, by the labels only the provider sets) on listener ports, allow cluster
// DNS, deny everything else.
func clusterLockdown(api *clusterPolicyAPI, gateways []ir.Gateway) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": api.spec(gateways)}}
	u.SetGroupVersionKind(api.gvk)
	u.SetName(ClusterLockdownName)
	u.SetLabels(map[string]string{managedByLabel: managedBy})
	return u
}

// clusterNetworkPolicySpec is the lockdown as a ClusterNetworkPolicy in the Admin tier.
func clusterNetworkPolicySpec(gateways []ir.Gateway) map[string]any {
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
			"to": []any{clusterDNSPods()},
			"protocols": []any{
				map[string]any{"udp": map[string]any{"destinationPort": map[string]any{"number": int64(53)}}},
				map[string]any{"tcp": map[string]any{"destinationPort": map[string]any{"number": int64(53)}}}}},
		map[string]any{"name": "deny-everything-else", "action": "Deny",
			"to": []any{map[string]any{"networks": []any{"0.0.0.0/0", "::/0"}}, map[string]any{"namespaces": map[string]any{}}}},
	)
	return map[string]any{
		"tier":     "Admin",
		"priority": int64(clusterLockdownPriority),
		"subject":  lockedNamespaces(),
		"egress":   rules,
	}
}

// lockedNamespaces is the policies' subject: the namespaces labelled for lockdown.
func lockedNamespaces() map[string]any {
	return map[string]any{"namespaces": matchLabels(map[string]string{LockdownLabel: "true"})}
}

// clusterDNSPods selects the cluster DNS pods, as the lockdown NetworkPolicy does.
func clusterDNSPods() map[string]any {
	return map[string]any{"pods": map[string]any{
		"namespaceSelector": matchLabels(clusterDNSPeer.NamespaceSelector.MatchLabels),
		"podSelector":       matchLabels(clusterDNSPeer.PodSelector.MatchLabels)}}
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
