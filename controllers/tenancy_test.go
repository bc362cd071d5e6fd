package controllers

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// Tenants of the isolation test, by the loopback address their pod holds.
const (
	podA      = "127.0.0.11" // tenant-a/client
	podB      = "127.0.0.12" // tenant-b/client
	noPod     = "127.0.0.99"
	hostAddr  = "127.0.0.1" // unrestricted: the machine itself
	teamToken = "tenant-b-secret-token-7f3a"
)

// TestTenantIsolationThroughTheManager drives isolation end to end: Pods in the API
// with loopback IPs, the manager, a real Envoy, clients bound to those addresses.
func TestTenantIsolationThroughTheManager(t *testing.T) {
	w := newWorld(t)
	w.port = xdstest.FreePort(t)
	w.envoy = w.startEnvoy("tenancy-gw/egress")
	upA := testupstream.Start(t, testupstream.Options{Name: "a"})
	upB := testupstream.Start(t, testupstream.Options{Name: "b"})
	for _, name := range []string{"api.a.test", "api.b.test"} {
		w.dns.Set(name, name+". 60 IN A 127.0.0.1")
	}
	w.apply(tenancyObjects(w.port, upA.Port(), upB.Port()))
	t.Cleanup(func() { deleteAllPods(w.c, "tenant-a", "tenant-b") })
	createPod(t, w.c, "tenant-a", "client", podA)
	createPod(t, w.c, "tenant-b", "client", podB)
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: "tenancy-gw"}}
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, translate.ConditionTenantIsolation, "True", translate.ReasonIsolated)
	waitAnswer(t, w.port, podA, "api.a.test", 200, "hello from a")

	t.Run("each tenant is served its own route for a hostname both use", func(t *testing.T) {
		wantAnswer(t, w.port, podA, "api.shared.test", 200, "hello from a")
		wantAnswer(t, w.port, podB, "api.shared.test", 200, "hello from b")
	})
	t.Run("a tenant cannot use another tenant's Backend, nor its credential", func(t *testing.T) {
		before := len(upB.Requests())
		wantAnswer(t, w.port, podA, "api.b.test", 403, "denied: no route for caller\n")
		if n := len(upB.Requests()) - before; n != 0 {
			t.Errorf("tenant-b's upstream saw %d requests from tenant-a", n)
		}
		for _, seen := range upA.Requests() {
			if strings.Contains(fmt.Sprint(seen.Header), teamToken) {
				t.Errorf("tenant-a's upstream saw tenant-b's credential: %v", seen.Header)
			}
		}
	})
	t.Run("an address no pod holds is refused", func(t *testing.T) {
		wantAnswer(t, w.port, noPod, "api.a.test", 403, "denied: unknown caller\n")
	})
	t.Run("the machine itself is unrestricted", func(t *testing.T) {
		wantAnswer(t, w.port, hostAddr, "api.b.test", 200, "hello from b")
	})
	t.Run("a ReferenceGrant from Pods admits another namespace's callers", func(t *testing.T) {
		grant := w.apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: callers-from-tenant-a, namespace: tenant-b}
spec:
  from: [{group: "", kind: Pod, namespace: tenant-a}]
  to: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: api}]
`)
		waitAnswer(t, w.port, podA, "api.b.test", 200, "hello from b")
		// tenant-a's own route still wins the hostname both use, for tenant-a's callers.
		wantAnswer(t, w.port, podA, "api.shared.test", 200, "hello from a")
		if err := w.c.Delete(context.Background(), grant[0]); err != nil {
			t.Fatal(err)
		}
		waitAnswer(t, w.port, podA, "api.b.test", 403, "denied: no route for caller\n")
	})
	t.Run("a deleted pod's address carries the new holder's rights only", func(t *testing.T) {
		deletePod(t, w.c, "tenant-a", "client")
		waitAnswer(t, w.port, podA, "api.a.test", 403, "denied: unknown caller\n")
		createPod(t, w.c, "tenant-b", "newcomer", podA)
		waitAnswer(t, w.port, podA, "api.shared.test", 200, "hello from b")
		wantAnswer(t, w.port, podA, "api.a.test", 403, "denied: no route for caller\n")
	})
	t.Run("a terminating pod loses its identity before its address can be reused", func(t *testing.T) {
		createPod(t, w.c, "tenant-a", "slow", "127.0.0.13", "example.com/hold")
		waitAnswer(t, w.port, "127.0.0.13", "api.a.test", 200, "hello from a")
		// The finalizer keeps the pod in the API, terminating, as a grace period does.
		if err := w.c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "slow"}}); err != nil {
			t.Fatal(err)
		}
		waitAnswer(t, w.port, "127.0.0.13", "api.a.test", 403, "denied: unknown caller\n")
		removeFinalizers(t, w.c, "tenant-a", "slow")
	})
	t.Run("turning isolation off restores the shared table for every caller", func(t *testing.T) {
		patchAnnotation(t, w.c, gw, translate.TenantIsolationAnnotation, "off")
		w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, translate.ConditionTenantIsolation, "False", translate.ReasonIsolationOff)
		waitAnswer(t, w.port, noPod, "api.b.test", 200, "hello from b")
	})
}

// tenancyObjects: tenant-a and tenant-b each have a Backend and a route for their own name
// and for api.shared.test; tenant-b's Backend injects a credential.
func tenancyObjects(gwPort, portA, portB uint32) string {
	return egressGatewayYAML("tenancy-gw", gwPort, "All") + fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: tenant-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: tenant-b}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: tenant-a}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: api.a.test}
    ports: [{name: http, port: %d, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: tenant-a}
spec:
  parentRefs: [{name: egress, namespace: tenancy-gw}]
  hostnames: [api.a.test, api.shared.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: tenant-b}
stringData: {token: %s}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: tenant-b}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: api.b.test}
    ports: [{name: http, port: %d, protocol: HTTP}]
  extensions:
  - type: portcullis.io/credential-injection
    config: {secretRef: {name: token}, key: token, prefix: "Bearer "}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: tenant-b}
spec:
  parentRefs: [{name: egress, namespace: tenancy-gw}]
  hostnames: [api.b.test, api.shared.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
`, portA, teamToken, portB)
}

// createPod creates a running pod holding ip, as the kubelet would report it.
func createPod(t *testing.T, c client.Client, ns, name, ip string, finalizers ...string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

func deletePod(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	zero := int64(0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Delete(context.Background(), pod, &client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
}

func removeFinalizers(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	pod := &corev1.Pod{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Finalizers = nil
	if err := c.Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

func patchAnnotation(t *testing.T, c client.Client, obj client.Object, key, value string) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value))
	if err := c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// callFrom sends GET / with a Host header from a loopback source address.
func callFrom(from string, port uint32, host string) (int, string, error) {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	resp, err := cl.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func answerIs(from string, port uint32, host string, status int, body string) error {
	got, b, err := callFrom(from, port, host)
	if err != nil {
		return err
	}
	if got != status || !strings.Contains(b, body) {
		return fmt.Errorf("from %s Host %s: %d %q, want %d with %q", from, host, got, b, status, body)
	}
	return nil
}

func wantAnswer(t *testing.T, port uint32, from, host string, status int, body string) {
	t.Helper()
	if err := answerIs(from, port, host, status, body); err != nil {
		t.Error(err)
	}
}

// waitAnswer waits (30 s: a busy CI machine compiles other packages meanwhile) until
// the gateway answers host from "from" with status and body.
func waitAnswer(t *testing.T, port uint32, from, host string, status int, body string) {
	t.Helper()
	xdstest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d from %s for %s", status, from, host), func() error {
		return answerIs(from, port, host, status, body)
	})
}

// deleteAllPods removes the test's pods, so that later tests on the same API server
// do not see its callers.
func deleteAllPods(c client.Client, namespaces ...string) {
	for _, ns := range namespaces {
		var pods corev1.PodList
		if c.List(context.Background(), &pods, client.InNamespace(ns)) != nil {
			continue
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if len(p.Finalizers) > 0 {
				p.Finalizers = nil
				_ = c.Update(context.Background(), p)
			}
			zero := int64(0)
			_ = c.Delete(context.Background(), p, &client.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
}
