package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestBackendAndRouteAppliedTogetherAreTranslatedOnce: the route, created while the
// reconcile the Backend's create started waits for the Backend's first DNS answer, is
// gathered again and translated with it. The two creates cost one translation (the
// reconcile the route's event queued reuses it), not one each.
func TestBackendAndRouteAppliedTogetherAreTranslatedOnce(t *testing.T) {
	const ns = "together"
	const host = "slow.together.test"
	w, reg := slowAnswerWorld(t, host)
	w.apply(egressGatewayYAML(ns, xdstest.FreePort(t), "Same"))
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: ns}}
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, "Accepted", "True", "Accepted")
	translations := func() float64 {
		n := 0.0
		for _, how := range []string{translationFull, translationDelta} {
			n += max(metricValue(t, reg, metricReconciles, map[string]string{"translation": how}), 0) // -1: none yet
		}
		return n
	}
	before := settledCount(t, translations)

	w.apply(fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: slow, namespace: %s}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: %s}
    ports: [{name: http, port: 9, protocol: HTTP}]
`, ns, host))
	awaitQuestion(t, w, host)
	w.apply(fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: %s}
spec:
  parentRefs: [{name: egress}]
  hostnames: [%s]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: slow, port: 9}]}]
`, ns, host))
	route := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns}}
	w.condition(route, func() []metav1.Condition {
		if len(route.Status.Parents) == 0 {
			return nil
		}
		return route.Status.Parents[0].Conditions
	}, "ResolvedRefs", "True", "ResolvedRefs")
	if n := settledCount(t, translations) - before; n != 1 {
		t.Errorf("%v translations for a Backend and its route created while the Backend's first answer was awaited, want 1", n)
	}
}

// slowAnswerWorld is a world with the operator's metrics, whose DNS server answers host
// after 100 ms: within a translation's wait for first answers (200 ms).
func slowAnswerWorld(t *testing.T, host string) (*world, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	w := newWorld(t, func(o *Options) { o.Metrics, o.FirstAnswerWait = reg, slowAnswerWait })
	w.dns.Script(host, dnstest.Response{Delay: slowAnswer, Answer: []string{host + ". 300 IN A 127.0.0.1"}})
	return w, reg
}

// slowAnswer is how long slowAnswerWorld's DNS server takes to answer, and
// slowAnswerWait how long its reconciles wait for a first answer: the answer comes
// within the wait, so the reconcile waiting for it translates with it, and an object
// applied once the question came (awaitQuestion) reaches the manager during the wait,
// on a loaded machine too. (With the 200 ms the manager waits, a 150 ms answer was
// still too soon in a full local CI run: the second apply's event came after it.)
const (
	slowAnswer     = 1500 * time.Millisecond
	slowAnswerWait = 3 * time.Second
)

// awaitQuestion waits until the DNS server has been asked host: the reconcile whose
// gather began to track it is then waiting for the answer. (A fixed pause after the
// first apply instead let both creates reach the queue before that reconcile began on a
// slow machine, and they cost one reconcile, not the two the tests count on.)
func awaitQuestion(t *testing.T, w *world, host string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); w.dns.Queries(host) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no DNS question for %s within 10 s of applying the Backend", host)
		}
	}
}

// settledCount reads count once it has not moved for half a second.
func settledCount(t *testing.T, count func() float64) float64 {
	t.Helper()
	last := count()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		now := count()
		if now == last {
			return now
		}
		last = now
	}
	t.Fatalf("the count still moved after 20 s (%v)", last)
	return 0
}
