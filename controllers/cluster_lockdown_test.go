package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// clusterPolicyCRD serves ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2,
// cluster-scoped) as sigs.k8s.io/network-policy-api v0.2.0 does, with an open schema:
// the test is about what the manager writes, which is checked field by field.
const clusterPolicyCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusternetworkpolicies.policy.networking.k8s.io
  annotations: {api-approved.kubernetes.io: "https://github.com/kubernetes-sigs/network-policy-api/pull/347"}
spec:
  group: policy.networking.k8s.io
  scope: Cluster
  names: {kind: ClusterNetworkPolicy, listKind: ClusterNetworkPolicyList, plural: clusternetworkpolicies, singular: clusternetworkpolicy}
  versions:
  - name: v1alpha2
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestClusterLockdownWhereTheAPIIsServed: with the ClusterNetworkPolicy API installed,
// locking a namespace down makes the manager write an Admin-tier policy that accepts
// only the Gateway's Envoy pods (in its namespace) on the listener port and cluster DNS,
// and denies everything else; unlocking the last namespace deletes it.
func TestClusterLockdownWhereTheAPIIsServed(t *testing.T) {
	crds := decodeYAML(t, "crd", clusterPolicyCRD)
	if err := api.Client.Create(context.Background(), crds[0]); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Client.Delete(context.Background(), crds[0]) })
	policy := &unstructured.Unstructured{}
	policy.SetGroupVersionKind(clusterPolicyGVK)
	xdstest.WaitFor(t, 20*time.Second, "the ClusterNetworkPolicy API to be served", func() error {
		return client.IgnoreNotFound(api.Client.Get(context.Background(), client.ObjectKey{Name: "absent"}, policy.DeepCopy()))
	})

	w := newWorld(t)
	port := xdstest.FreePort(t)
	w.apply(egressGatewayYAML("cnp-gw", port, "All") + `
apiVersion: v1
kind: Namespace
metadata: {name: cnp-locked, labels: {egress.portcullis.io/lockdown: "true"}}
`)
	xdstest.WaitFor(t, 20*time.Second, "the ClusterNetworkPolicy", func() error {
		if err := w.c.Get(context.Background(), client.ObjectKey{Name: ClusterLockdownName}, policy); err != nil {
			return err
		}
		return checkClusterLockdown(policy, "cnp-gw", port)
	})

	ns := decodeYAML(t, "ns", "apiVersion: v1\nkind: Namespace\nmetadata: {name: cnp-locked}\n")[0]
	bump(t, w, ns, client.ObjectKey{Name: "cnp-locked"}, func(o client.Object) { o.SetLabels(nil) })
	xdstest.WaitFor(t, 20*time.Second, "the ClusterNetworkPolicy to be deleted once no namespace is locked", func() error {
		err := w.c.Get(context.Background(), client.ObjectKey{Name: ClusterLockdownName}, policy.DeepCopy())
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// checkClusterLockdown checks the policy's tier, subject and rules, in order.
func checkClusterLockdown(p *unstructured.Unstructured, gatewayNS string, port uint32) error {
	spec := p.Object["spec"].(map[string]any)
	if spec["tier"] != "Admin" {
		return fmt.Errorf("tier %v, want Admin (before any NetworkPolicy)", spec["tier"])
	}
	subject := fmt.Sprint(spec["subject"])
	if want := "map[namespaces:map[matchLabels:map[" + LockdownLabel + ":true]]]"; subject != want {
		return fmt.Errorf("subject %s, want %s", subject, want)
	}
	rules, _, _ := unstructured.NestedSlice(p.Object, "spec", "egress")
	if len(rules) != 3 {
		return fmt.Errorf("%d egress rules, want 3: %v", len(rules), rules)
	}
	wantRules := []string{
		fmt.Sprintf("map[action:Accept name:to-gateways protocols:[map[tcp:map[destinationPort:map[number:%d]]]] "+
			"to:[map[pods:map[namespaceSelector:map[matchExpressions:[map[key:kubernetes.io/metadata.name operator:In values:[%s]]]] "+
			"podSelector:map[matchLabels:map[app.kubernetes.io/name:portcullis-envoy]]]]]]", port, gatewayNS),
		"map[action:Accept name:to-cluster-dns protocols:[map[udp:map[destinationPort:map[number:53]]] map[tcp:map[destinationPort:map[number:53]]]] " +
			"to:[map[pods:map[namespaceSelector:map[matchLabels:map[kubernetes.io/metadata.name:kube-system]] podSelector:map[matchLabels:map[k8s-app:kube-dns]]]]]]",
		"map[action:Deny name:deny-everything-else to:[map[networks:[0.0.0.0/0 ::/0]] map[namespaces:map[]]]]",
	}
	for i, want := range wantRules {
		if got := fmt.Sprint(rules[i]); got != want {
			return fmt.Errorf("rule %d:\n got %s\nwant %s", i, got, want)
		}
	}
	return nil
}
