package controllers

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testpki"
)

func TestConditionEventsFollowTransitions(t *testing.T) {
	cond := func(typ, status, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: reason + " message"}
	}
	refsMissing := cond("ResolvedRefs", "False", "InvalidCertificateRef")
	refsOK := cond("ResolvedRefs", "True", "ResolvedRefs")
	warn := conditionEvent{eventType: corev1.EventTypeWarning, reason: "InvalidCertificateRef", message: "InvalidCertificateRef message"}
	tests := []struct {
		name          string
		before, after conditionSets
		want          []conditionEvent
	}{
		{name: "a new object with a False condition warns", before: conditionSets{},
			after: conditionSets{"": {refsMissing}}, want: []conditionEvent{warn}},
		{name: "True turning False warns", before: conditionSets{"": {refsOK}},
			after: conditionSets{"": {refsMissing}}, want: []conditionEvent{warn}},
		{name: "False staying False for the same reason is not repeated, even with a new message", before: conditionSets{"": {refsMissing}},
			after: conditionSets{"": {{Type: "ResolvedRefs", Status: "False", Reason: "InvalidCertificateRef", Message: "other"}}}},
		{name: "False for another reason is a new problem", before: conditionSets{"": {cond("ResolvedRefs", "False", "ServiceNotFound")}},
			after: conditionSets{"": {refsMissing}}, want: []conditionEvent{warn}},
		{name: "a warned problem that is fixed is a Normal event", before: conditionSets{"": {refsMissing}},
			after: conditionSets{"": {refsOK}}, want: []conditionEvent{{eventType: corev1.EventTypeNormal, reason: "ResolvedRefs", message: "ResolvedRefs message"}}},
		{name: "waiting for Envoy is not a problem, and ending the wait is not news", before: conditionSets{"": {cond("Programmed", "True", "Programmed")}},
			after: conditionSets{"": {cond("Programmed", "False", "Pending")}}},
		{name: "Pending turning True emits nothing", before: conditionSets{"": {cond("Programmed", "False", "Pending")}},
			after: conditionSets{"": {cond("Programmed", "True", "Programmed")}}},
		{name: "an unreferenced Backend is not a problem", before: conditionSets{},
			after: conditionSets{"": {cond("Programmed", "False", "NotReferenced")}}},
		{name: "Envoy rejecting after Pending warns", before: conditionSets{"": {cond("Programmed", "False", "Pending")}},
			after: conditionSets{"": {cond("Programmed", "False", "Rejected")}},
			want:  []conditionEvent{{eventType: corev1.EventTypeWarning, reason: "Rejected", message: "Rejected message"}}},
		{name: "a condition whose False is healthy (Conflicted) emits nothing", before: conditionSets{},
			after: conditionSets{"listener http": {cond("Conflicted", "False", "NoConflicts")}}},
		{name: "a listener's or parent's problem names its scope", before: conditionSets{},
			after: conditionSets{"parent apps/egress": {cond("ResolvedRefs", "False", "BackendNotFound")}, "listener http": {cond("Accepted", "False", "UnsupportedProtocol")}},
			want: []conditionEvent{
				{eventType: corev1.EventTypeWarning, reason: "UnsupportedProtocol", message: "listener http: UnsupportedProtocol message"},
				{eventType: corev1.EventTypeWarning, reason: "BackendNotFound", message: "parent apps/egress: BackendNotFound message"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := conditionEvents(tt.before, tt.after); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("events %+v\nwant   %+v", got, tt.want)
			}
		})
	}
}

// TestConditionEventsOncePerMistake: a Backend whose CA ConfigMap is missing gets one
// Warning however often the manager reconciles; once the ConfigMap exists a Normal event
// says so, and deleting it again is a new Warning.
func TestConditionEventsOncePerMistake(t *testing.T) {
	w := newWorld(t)
	const ns = "events"
	ca := testpki.NewCA(t, "events-ca")
	w.apply(egressGatewayYAML(ns, xdstest.FreePort(t), "Same") + fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: %[1]s}
spec:
  destination:
    type: IP
    ip:
      address: 127.0.0.1
      tls: {caCertificates: [{secretRef: {name: ca, kind: ConfigMap}}]}
    ports: [{name: https, port: 9443, protocol: HTTPS}]
`, ns))
	b := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns}}
	refs := func(status, reason string) {
		w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "ResolvedRefs", status, reason)
	}
	steps := []struct {
		name            string
		do              func()
		status, reason  string
		warnings, fixed int32
	}{
		{name: "the missing ConfigMap is one Warning", do: func() {}, status: "False", reason: "InvalidCACertificateRef", warnings: 1},
		{name: "reconciles that change nothing add none", do: func() {
			for range 3 {
				w.resync()
				time.Sleep(300 * time.Millisecond)
			}
		}, status: "False", reason: "InvalidCACertificateRef", warnings: 1},
		{name: "creating the ConfigMap is a Normal event", do: func() {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns}, Data: map[string]string{"ca.crt": string(ca.CertPEM)}}
			if err := w.c.Create(context.Background(), cm); err != nil {
				t.Fatal(err)
			}
		}, status: "True", reason: "ResolvedRefs", warnings: 1, fixed: 1},
		{name: "deleting it again is a new Warning", do: func() {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns}}
			if err := w.c.Delete(context.Background(), cm); err != nil {
				t.Fatal(err)
			}
		}, status: "False", reason: "InvalidCACertificateRef", warnings: 2, fixed: 1},
	}
	for _, step := range steps {
		step.do()
		refs(step.status, step.reason)
		time.Sleep(time.Second) // the recorder sends asynchronously; a surplus Event would show by now
		want := map[string]int32{"Warning/InvalidCACertificateRef": step.warnings, "Normal/ResolvedRefs": step.fixed}
		xdstest.WaitFor(t, 10*time.Second, step.name, func() error {
			got := eventCounts(t, w.c, ns, "Backend", "api")
			for k, n := range want {
				if got[k] != n {
					return fmt.Errorf("events %v, want %v", got, want)
				}
			}
			return nil
		})
	}
}

// eventCounts sums the Events of one object by "type/reason" (the recorder folds a
// repeated identical Event into its count).
func eventCounts(t *testing.T, c client.Client, ns, kind, name string) map[string]int32 {
	t.Helper()
	var list corev1.EventList
	if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name {
			continue
		}
		n := e.Count
		if e.Series != nil && e.Series.Count > n {
			n = e.Series.Count
		}
		out[e.Type+"/"+e.Reason] += max(n, 1)
	}
	return out
}
