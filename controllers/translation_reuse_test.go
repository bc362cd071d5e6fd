package controllers

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testpki"
)

// TestReusedTranslationStillSeesCertificatesExpire: a client certificate that expires
// while nothing is edited turns its Backend's ResolvedRefs False at its expiry, although
// reconciles without new input reuse the last translation: the translation said until
// when it stood, and the reconciler came back then.
func TestReusedTranslationStillSeesCertificatesExpire(t *testing.T) {
	reg := prometheus.NewRegistry()
	w := newWorld(t, func(o *Options) { o.Metrics = reg })
	const ns = "reuse"
	w.dns.Set("api.reuse.test", "api.reuse.test. 60 IN A 127.0.0.1")
	// x509 validity has whole seconds; a few of them leave time to see it valid first.
	expires := time.Now().Add(6 * time.Second)
	cert := testpki.NewCA(t, "reuse-ca").Issue(t, testpki.Options{CommonName: "short-lived", Client: true, NotAfter: expires})
	w.apply(egressGatewayYAML(ns, xdstest.FreePort(t), "Same") + fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: short-lived, namespace: %[1]s}
type: kubernetes.io/tls
data: {tls.crt: %[2]s, tls.key: %[3]s}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: %[1]s}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: api.reuse.test
      tls: {clientCertificate: {secretRef: {name: short-lived}}}
    ports: [{name: https, port: 443, protocol: HTTPS}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: %[1]s}
spec:
  parentRefs: [{name: egress}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
`, ns, base64.StdEncoding.EncodeToString(cert.CertPEM), base64.StdEncoding.EncodeToString(cert.KeyPEM)))
	w.startEnvoy(ns + "/egress")
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: ns}}
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, "Programmed", "True", "Programmed")
	b := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns}}
	w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "Programmed", "True", "Programmed")
	if time.Now().After(expires) {
		t.Fatal("the certificate expired before the Backend was seen programmed; the test needs a longer validity")
	}
	// Whether reconciles reused the translation depends on everything else the shared
	// API server holds (other tests' objects keep the DNS guard and the lockdown busy);
	// TestReuseDecision covers the decision, this test what reuse must not hide.
	if n := metricValue(t, reg, metricReconciles, map[string]string{"translation": "translated"}); n < 1 {
		t.Errorf("%s{translation=translated} = %v; want the translations counted", metricReconciles, n)
	}

	w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "ResolvedRefs", "False", "InvalidCertificateRef")
	if c := apimeta.FindStatusCondition(b.Status.Conditions, "ResolvedRefs"); c == nil || !strings.Contains(c.Message, "expired at") {
		t.Errorf("ResolvedRefs %+v; want its message to say the certificate expired", c)
	}
}

// TestReuseDecision: the last translation is reused only while every input it read is
// as it was, and the copy handed out can be marked without changing the one kept.
func TestReuseDecision(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	since := now.Add(-time.Hour)
	resolved := func(ip string, expires time.Time) egress.Addresses {
		return egress.Addresses{"api.example.com": {State: egress.ResolutionResolved,
			Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr(ip), Since: since, Expires: expires}}}}
	}
	own := map[uint32]string{19000: "admin"}
	tests := []struct {
		name       string
		events     uint64
		own        map[uint32]string
		addrs      egress.Addresses
		now        time.Time
		validUntil time.Time
		want       bool
	}{
		{name: "nothing changed: reused", events: 7, own: own, addrs: resolved("203.0.113.7", now.Add(time.Minute)), now: now, want: true},
		{name: "a DNS refresh that only moved the expiry: reused", events: 7, own: own, addrs: resolved("203.0.113.7", now.Add(2*time.Minute)), now: now, want: true},
		{name: "a watch event since: translated", events: 8, own: own, addrs: resolved("203.0.113.7", now.Add(time.Minute)), now: now},
		{name: "another vetted address: translated", events: 7, own: own, addrs: resolved("203.0.113.8", now.Add(time.Minute)), now: now},
		{name: "a name no longer tracked: translated", events: 7, own: own, addrs: egress.Addresses{}, now: now},
		{name: "the own ports moved: translated", events: 7, own: map[uint32]string{19001: "admin"}, addrs: resolved("203.0.113.7", now.Add(time.Minute)), now: now},
		{name: "before a certificate expires: reused", events: 7, own: own, addrs: resolved("203.0.113.7", now.Add(time.Minute)), now: now,
			validUntil: now.Add(time.Second), want: true},
		{name: "once it expired: translated", events: 7, own: own, addrs: resolved("203.0.113.7", now.Add(time.Minute)), now: now,
			validUntil: now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{}
			res := &egress.Resources{}
			result := translate.Result{ValidUntil: tt.validUntil, Statuses: translate.Statuses{
				Backends: map[string]*egressv1alpha1.BackendStatus{"apps/api": {Conditions: []metav1.Condition{{Type: "Programmed", Reason: "Pending"}}}}}}
			r.remember(7, own, resolved("203.0.113.7", now.Add(time.Minute)), res, result)
			asked := false
			gotRes, got, ok := r.reusable(tt.events, tt.own, func() egress.Addresses { asked = true; return tt.addrs }, tt.now)
			if ok != tt.want {
				t.Fatalf("reused %v, want %v", ok, tt.want)
			}
			// Copying the DNS answers costs milliseconds at ten thousand names: only a
			// decision that the rest allows may ask for them.
			if wantAsked := tt.events == 7 && maps.Equal(tt.own, own) && (tt.validUntil.IsZero() || tt.now.Before(tt.validUntil)); asked != wantAsked {
				t.Errorf("the DNS answers were asked for: %v, want %v", asked, wantAsked)
			}
			if !ok {
				return
			}
			if gotRes != res {
				t.Error("the reused resources are not the ones translated")
			}
			got.Statuses.Backends = r.marks.mark(got.Statuses.Backends, func(string, *egressv1alpha1.BackendStatus) (programmedMark, bool) {
				return programmedMark{status: metav1.ConditionTrue, reason: "Programmed"}, true
			})
			if reason := got.Statuses.Backends["apps/api"].Conditions[0].Reason; reason != "Programmed" {
				t.Errorf("the reuse's marked statuses say %q; want the mark", reason)
			}
			_, again, _ := r.reusable(tt.events, tt.own, func() egress.Addresses { return tt.addrs }, tt.now)
			if reason := again.Statuses.Backends["apps/api"].Conditions[0].Reason; reason != "Pending" {
				t.Errorf("marking one reuse changed the kept translation: the next reuse says %q", reason)
			}
		})
	}
}

// TestBackendMarksAreReusedWhileTheyHold: marking the same translated status the same
// way returns the same copy (the status writer then compares pointers), a different
// mark or a new translation a new copy, the translated status is never changed, and a
// mark no reconcile used is dropped.
func TestBackendMarksAreReusedWhileTheyHold(t *testing.T) {
	pending := func() *egressv1alpha1.BackendStatus {
		return &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}, {Type: "Programmed", Status: metav1.ConditionUnknown, Reason: "Pending"}}}
	}
	programmed := programmedMark{status: metav1.ConditionTrue, reason: "Programmed", message: "Envoy acknowledged the configuration of gw/egress"}
	var marks backendMarks
	src := pending()
	first := marks.backend("apps/api", src, programmed)
	if c := findCond(first.Conditions, "Programmed"); c.Status != metav1.ConditionTrue || c.Reason != "Programmed" || c.Message != programmed.message {
		t.Fatalf("marked Programmed %+v, want %+v", c, programmed)
	}
	if c := findCond(src.Conditions, "Programmed"); c.Reason != "Pending" {
		t.Fatalf("marking changed the translated status: %+v", c)
	}
	marks.sweep()
	if again := marks.backend("apps/api", src, programmed); again != first {
		t.Error("the same status marked the same way got a new copy")
	}
	marks.sweep()
	if other := marks.backend("apps/api", src, programmedMark{status: metav1.ConditionFalse, reason: "Pending", message: "waiting"}); other == first {
		t.Error("a different mark returned the old copy")
	}
	marks.sweep()
	if fresh := marks.backend("apps/api", pending(), programmed); fresh == first {
		t.Error("a new translation's status returned a copy of the old one")
	}
	marks.sweep()
	marks.sweep()
	if len(marks.m) != 0 {
		t.Errorf("%d marks kept after a reconcile that used none", len(marks.m))
	}
}

// TestMarkedViewFollowsTranslation: the statuses a reconcile writes are translation's
// with the marks in place of the Pending ones marked, in a map kept from one reconcile
// to the next (marking allocates no map), holding no Backend translation no longer
// has; translation's own map is never written.
func TestMarkedViewFollowsTranslation(t *testing.T) {
	pending := func() *egressv1alpha1.BackendStatus {
		return &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionUnknown, Reason: "Pending"}}}
	}
	onlyA := func(key string, _ *egressv1alpha1.BackendStatus) (programmedMark, bool) {
		return programmedMark{status: metav1.ConditionTrue, reason: "Programmed"}, key == "apps/a"
	}
	a, b, c := pending(), pending(), pending()
	var marks backendMarks
	first := map[string]*egressv1alpha1.BackendStatus{"apps/a": a, "apps/b": b}
	view := marks.mark(first, onlyA)
	if got := view["apps/a"]; got == a || got.Conditions[0].Reason != "Programmed" {
		t.Errorf("apps/a in the view: %+v; want its mark, a copy", got)
	}
	if view["apps/b"] != b {
		t.Error("apps/b, not marked, is not translation's own status in the view")
	}
	if first["apps/a"] != a || a.Conditions[0].Reason != "Pending" || len(first) != 2 {
		t.Error("marking wrote into translation's map or status")
	}
	second := map[string]*egressv1alpha1.BackendStatus{"apps/a": a, "apps/c": c}
	again := marks.mark(second, onlyA)
	if reflect.ValueOf(again).UnsafePointer() != reflect.ValueOf(view).UnsafePointer() {
		t.Error("the next reconcile's marking made a new map")
	}
	if _, ok := again["apps/b"]; ok || len(again) != 2 || again["apps/c"] != c {
		t.Errorf("the view after apps/b went and apps/c came: %v; want apps/a marked and apps/c", again)
	}
}
