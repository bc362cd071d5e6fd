package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestBackendEditIsCountedAsADelta edits a Backend's server name on a running manager
// and waits for a reconcile counted as translation="delta": the reconciler's Cache
// starts that translation from the last one, and says so. Other tests' objects share
// the API server and may change meanwhile (which makes a translation full), so the edit
// is repeated until one is counted, a few times at most.
func TestBackendEditIsCountedAsADelta(t *testing.T) {
	const ns = "delta-metric"
	w, reg := apiBackendWorld(t, ns, "api.delta.test")
	deltas := func() float64 {
		return metricValue(t, reg, metricReconciles, map[string]string{"translation": translationDelta})
	}
	for i := range 5 {
		if err := editServerName(w.c, ns, fmt.Sprintf("v%d.delta.test", i)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if deltas() >= 1 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Fatalf("%s{translation=%s} = %v after five server name edits; want a delta counted", metricReconciles, translationDelta, deltas())
}

// apiBackendWorld starts a manager whose operator metrics go to the registry it
// returns, with a Gateway egress in ns and the Backend api to host (apiBackendYAML),
// once the Backend is Accepted.
func apiBackendWorld(t *testing.T, ns, host string) (*world, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	w := newWorld(t, func(o *Options) { o.Metrics = reg })
	w.dns.Set(host, host+". 3600 IN A 127.0.0.1")
	w.apply(egressGatewayYAML(ns, xdstest.FreePort(t), "Same") + apiBackendYAML(ns, host))
	b := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns}}
	w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "Accepted", "True", "Accepted")
	return w, reg
}

// apiBackendYAML is the Backend api, HTTPS to host, and the HTTPRoute api to it from
// the Gateway egress.
func apiBackendYAML(ns, host string) string {
	return fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: %[1]s}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: %[2]s, tls: {wellKnownCACertificates: System}}
    ports: [{name: https, port: 443, protocol: HTTPS}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: %[1]s}
spec:
  parentRefs: [{name: egress}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
`, ns, host)
}

// editServerName sets the Backend api's TLS server name.
func editServerName(c client.Client, ns, sni string) error {
	var be egressv1alpha1.Backend
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "api"}, &be); err != nil {
		return err
	}
	be.Spec.Destination.FQDN.TLS.ServerName = &sni
	return c.Update(context.Background(), &be)
}
