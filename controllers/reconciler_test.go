package controllers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

func TestManagerProgramsEnvoyAndWritesStatuses(t *testing.T) {
	w := startWorld(t)
	up := testupstream.Start(t, testupstream.Options{Name: "api"})
	w.dns.Set("api.manager.test", "api.manager.test. 60 IN A 127.0.0.1")
	w.apply(fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: gw}
---
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
`+portcullisClassYAML+`---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: gw}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: %d, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: apps}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: api.manager.test}
    ports: [{name: http, port: %d, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: apps}
spec:
  parentRefs: [{name: egress, namespace: gw}]
  hostnames: [api.manager.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
`, w.port, up.Port()))

	gc := &gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"}}
	w.condition(gc, func() []metav1.Condition { return gc.Status.Conditions }, "Accepted", "True", "Accepted")
	if n := len(gc.Status.SupportedFeatures); n == 0 || gc.Status.SupportedFeatures[0].Name != "BackendTLSPolicy" {
		t.Errorf("GatewayClass supportedFeatures = %v; want the sorted list starting with BackendTLSPolicy", gc.Status.SupportedFeatures)
	}
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: "gw"}}
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, "Programmed", "True", "Programmed")
	b := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "apps"}}
	w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "AddressesResolved", "True", "Resolved")
	w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "Programmed", "True", "Programmed")
	if b.Status.Destination != "api.manager.test" || len(b.Status.Addresses) != 1 || b.Status.Addresses[0].IP != "127.0.0.1" {
		t.Errorf("Backend status %+v; want destination api.manager.test and address 127.0.0.1", b.Status)
	}
	route := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "apps"}}
	w.condition(route, func() []metav1.Condition {
		if len(route.Status.Parents) == 0 {
			return nil
		}
		return route.Status.Parents[0].Conditions
	}, "ResolvedRefs", "True", "ResolvedRefs")

	xdstest.WaitFor(t, 10*time.Second, "a request through Envoy", func() error {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", w.port), nil)
		req.Host = "api.manager.test"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})

	assertResyncWritesNothing(t, w, []client.Object{gc, gw, b, route})
	assertLockdownFollowsTheLabel(t, w)
}

// assertLockdownFollowsTheLabel: a labelled namespace gets the lockdown policy allowing
// the Envoy listener port and DNS only; a deleted policy comes back; removing the label
// removes it.
func assertLockdownFollowsTheLabel(t *testing.T, w *world) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "locked", Labels: map[string]string{LockdownLabel: "true"}}}
	if err := w.c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "locked", Name: LockdownPolicyName}
	waitPolicy := func(want bool) *networkingv1.NetworkPolicy {
		np := &networkingv1.NetworkPolicy{}
		xdstest.WaitFor(t, 10*time.Second, fmt.Sprintf("lockdown policy present=%v", want), func() error {
			err := w.c.Get(ctx, key, np)
			switch {
			case want && err != nil:
				return err
			case !want && err == nil:
				return fmt.Errorf("still there")
			}
			return nil
		})
		return np
	}
	np := waitPolicy(true)
	// Other tests' Gateways of this controller may still exist: their ports are allowed too.
	hasPort := func(rule networkingv1.NetworkPolicyEgressRule, port int) bool {
		for _, p := range rule.Ports {
			if p.Port.IntValue() == port {
				return true
			}
		}
		return false
	}
	ownGateway := func(rule networkingv1.NetworkPolicyEgressRule) bool {
		to := rule.To[0]
		return to.IPBlock == nil && to.NamespaceSelector.MatchLabels[corev1.LabelMetadataName] == "gw" &&
			to.PodSelector.MatchLabels["gateway.portcullis.io/name"] == "egress" && hasPort(rule, int(w.port))
	}
	last := len(np.Spec.Egress) - 1
	if last < 1 || !slices.ContainsFunc(np.Spec.Egress[:last], ownGateway) || !hasPort(np.Spec.Egress[last], 53) {
		t.Fatalf("lockdown egress rules = %+v; want gw/egress's Envoy pods in namespace gw on port %d, then DNS", np.Spec.Egress, w.port)
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeEgress {
		t.Fatalf("policy types %v; want Egress only", np.Spec.PolicyTypes)
	}
	if err := w.c.Delete(ctx, np); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	waitPolicy(true)
	if err := w.c.Get(ctx, types.NamespacedName{Name: "locked"}, ns); err != nil {
		t.Fatal(err)
	}
	delete(ns.Labels, LockdownLabel)
	if err := w.c.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	waitPolicy(false)
}
