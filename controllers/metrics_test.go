package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestOperatorMetrics: a scrape shows the Gateway programmed with one Envoy connected, the
// Backends by condition, and reconcile durations; when the Envoy goes, the gauges say so.
func TestOperatorMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	w := newWorld(t, func(o *Options) { o.Metrics = reg })
	const ns = "metrics"
	w.dns.Set("api.metrics.test", "api.metrics.test. 60 IN A 127.0.0.1")
	gwPort := xdstest.FreePort(t)
	w.apply(egressGatewayYAML(ns, gwPort, "Same") + fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: %[1]s}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: api.metrics.test}
    ports: [{name: http, port: 9080, protocol: HTTP}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: unused, namespace: %[1]s}
spec:
  destination:
    type: IP
    ip: {address: 93.184.215.14}
    ports: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: %[1]s}
spec:
  parentRefs: [{name: egress}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
`, ns))
	envoy := w.startEnvoy(ns + "/egress")
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: ns}}
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, "Programmed", "True", "Programmed")
	b := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns}}
	w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "Programmed", "True", "Programmed")

	gateway := map[string]string{"gateway": ns + "/egress"}
	waitMetric(t, reg, metricGatewayProgrammed, gateway, 1)
	waitMetric(t, reg, metricEnvoysConnected, gateway, 1)
	// Whatever other tests left in the API server is counted too: at least ours.
	for _, status := range []string{"True", "False"} { // False: the Backend no route uses
		labels := map[string]string{"condition": "Programmed", "status": status}
		xdstest.WaitFor(t, 20*time.Second, fmt.Sprintf("%s%v >= 1", metricBackends, labels), func() error {
			if n := metricValue(t, reg, metricBackends, labels); n < 1 {
				return fmt.Errorf("now %v", n)
			}
			return nil
		})
	}
	if n := metricValue(t, reg, metricReconcileDuration, nil); n < 1 {
		t.Errorf("%s has %v observations; want some", metricReconcileDuration, n)
	}
	if n := metricValue(t, reg, metricIdleCollections, nil); n < 0 {
		t.Errorf("%s is not served", metricIdleCollections)
	}
	waitMetric(t, reg, metricStatusDeferred, nil, 0) // settled: the last write stored every status

	envoy.Stop()
	waitMetric(t, reg, metricEnvoysConnected, gateway, 0)
	waitMetric(t, reg, metricGatewayProgrammed, gateway, 0)
}

func waitMetric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string, want float64) {
	t.Helper()
	xdstest.WaitFor(t, 10*time.Second, fmt.Sprintf("%s%v = %v", name, labels, want), func() error {
		if got := metricValue(t, reg, name, labels); got != want {
			return fmt.Errorf("now %v", got)
		}
		return nil
	})
}

// metricValue is the value of the series with the labels (a histogram's sample count,
// a counter's or a gauge's value), or -1 when there is none.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				if h := m.GetHistogram(); h != nil {
					return float64(h.GetSampleCount())
				}
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
