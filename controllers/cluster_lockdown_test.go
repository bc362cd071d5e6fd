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

// adminPolicyCRD serves AdminNetworkPolicy (policy.networking.k8s.io/v1alpha1,
// cluster-scoped) as sigs.k8s.io/network-policy-api v0.1.x does, with an open schema.
const adminPolicyCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: adminnetworkpolicies.policy.networking.k8s.io
  annotations: {api-approved.kubernetes.io: "https://github.com/kubernetes-sigs/network-policy-api/pull/30"}
spec:
  group: policy.networking.k8s.io
  scope: Cluster
  names: {kind: AdminNetworkPolicy, listKind: AdminNetworkPolicyList, plural: adminnetworkpolicies, singular: adminnetworkpolicy, shortNames: [anp]}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestClusterLockdownWhereTheAPIIsServed: with a cluster network policy API installed,
// locking a namespace down makes the manager write a policy evaluated before every
// NetworkPolicy that allows only the Gateway's Envoy pods (in its namespace) on the
// listener port and cluster DNS, and denies everything else; unlocking the last
// namespace deletes it. Each API is installed alone.
func TestClusterLockdownWhereTheAPIIsServed(t *testing.T) {
	tests := []struct {
		name, crd, prefix string
		api               *clusterPolicyAPI
		check             func(*unstructured.Unstructured, string, uint32) error
	}{
		{"ClusterNetworkPolicy v1alpha2", clusterPolicyCRD, "cnp", clusterPolicyAPIs[0], checkClusterLockdown},
		{"AdminNetworkPolicy v1alpha1", adminPolicyCRD, "anp", clusterPolicyAPIs[1], checkAdminLockdown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			installAlone(t, tc.crd, tc.api)
			policy := &unstructured.Unstructured{}
			policy.SetGroupVersionKind(tc.api.gvk)
			w := newWorld(t)
			port := xdstest.FreePort(t)
			objs := w.apply(egressGatewayYAML(tc.prefix+"-gw", port, "All") + fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: %s-locked, labels: {egress.portcullis.io/lockdown: "true"}}
`, tc.prefix))
			t.Cleanup(func() { // the next API's policy must list only its own Gateway
				for _, o := range objs {
					if o.GetObjectKind().GroupVersionKind().Kind == "Gateway" {
						_ = w.c.Delete(context.Background(), o)
					}
				}
			})
			xdstest.WaitFor(t, 20*time.Second, "the "+tc.api.gvk.Kind, func() error {
				if err := w.c.Get(context.Background(), client.ObjectKey{Name: ClusterLockdownName}, policy); err != nil {
					return err
				}
				return tc.check(policy, tc.prefix+"-gw", port)
			})

			ns := decodeYAML(t, "ns", "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+tc.prefix+"-locked}\n")[0]
			bump(t, w, ns, client.ObjectKey{Name: tc.prefix + "-locked"}, func(o client.Object) { o.SetLabels(nil) })
			xdstest.WaitFor(t, 20*time.Second, "the "+tc.api.gvk.Kind+" to be deleted once no namespace is locked", func() error {
				err := w.c.Get(context.Background(), client.ObjectKey{Name: ClusterLockdownName}, policy.DeepCopy())
				if apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("still there (%v)", err)
			})
		})
	}
}

// installAlone installs the CRD, waits until its API is served, and removes it when the
// test ends, waiting until it is gone: the next test must see only its own API.
func installAlone(t *testing.T, crdYAML string, policyAPI *clusterPolicyAPI) {
	t.Helper()
	crd := decodeYAML(t, "crd", crdYAML)[0]
	if err := api.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	probe := &unstructured.Unstructured{}
	probe.SetGroupVersionKind(policyAPI.gvk)
	xdstest.WaitFor(t, 20*time.Second, "the "+policyAPI.gvk.Kind+" API to be served", func() error {
		return client.IgnoreNotFound(api.Client.Get(context.Background(), client.ObjectKey{Name: "absent"}, probe))
	})
	t.Cleanup(func() {
		_ = api.Client.Delete(context.Background(), crd)
		xdstest.WaitFor(t, 30*time.Second, "the "+policyAPI.gvk.Kind+" CRD to go", func() error {
			err := api.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), crd.DeepCopyObject().(client.Object))
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%v)", err)
		})
	})
}

// checkAdminLockdown checks the AdminNetworkPolicy's priority, subject and rules, in
// order.
func checkAdminLockdown(p *unstructured.Unstructured, gatewayNS string, port uint32) error {
	spec := p.Object["spec"].(map[string]any)
	if spec["priority"] != int64(clusterLockdownPriority) {
		return fmt.Errorf("priority %v, want %d", spec["priority"], clusterLockdownPriority)
	}
	if subject, want := fmt.Sprint(spec["subject"]), "map[namespaces:map[matchLabels:map["+LockdownLabel+":true]]]"; subject != want {
		return fmt.Errorf("subject %s, want %s", subject, want)
	}
	rules, _, _ := unstructured.NestedSlice(p.Object, "spec", "egress")
	wantRules := []string{
		fmt.Sprintf("map[action:Allow name:to-gateways ports:[map[portNumber:map[port:%d protocol:TCP]]] "+
			"to:[map[pods:map[namespaceSelector:map[matchExpressions:[map[key:kubernetes.io/metadata.name operator:In values:[%s]]]] "+
			"podSelector:map[matchLabels:map[app.kubernetes.io/name:portcullis-envoy]]]]]]", port, gatewayNS),
		"map[action:Allow name:to-cluster-dns ports:[map[portNumber:map[port:53 protocol:UDP]] map[portNumber:map[port:53 protocol:TCP]]] " +
			"to:[map[pods:map[namespaceSelector:map[matchLabels:map[kubernetes.io/metadata.name:kube-system]] podSelector:map[matchLabels:map[k8s-app:kube-dns]]]]]]",
		"map[action:Deny name:deny-everything-else to:[map[networks:[0.0.0.0/0 ::/0]] map[namespaces:map[]]]]",
	}
	if len(rules) != len(wantRules) {
		return fmt.Errorf("%d egress rules, want %d: %v", len(rules), len(wantRules), rules)
	}
	for i, want := range wantRules {
		if got := fmt.Sprint(rules[i]); got != want {
			return fmt.Errorf("rule %d:\n got %s\nwant %s", i, got, want)
		}
	}
	return nil
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
