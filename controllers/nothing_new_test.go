package controllers

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/translate"
)

func TestNothingNewOnlyWhenTheLastReconcileStandsForThePresent(t *testing.T) {
	now := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	clock := now
	tests := []struct {
		name   string
		change func(r *Reconciler)
		stands bool
		// requeue is what a reconcile that returns at once asks for.
		requeue time.Duration
	}{
		{name: "woken only by input its translation read", change: func(*Reconciler) {}, stands: true},
		{name: "its requeue not yet due is asked for again", change: func(r *Reconciler) { r.run.due = now.Add(300 * time.Millisecond) }, stands: true, requeue: 300 * time.Millisecond},
		{name: "its requeue due", change: func(r *Reconciler) { r.run.due = now }},
		{name: "an Envoy answer, DNS news, the lease or a policy woke it since", change: func(r *Reconciler) { r.otherWakes.Add(1) }},
		{name: "an input event its translation did not read", change: func(r *Reconciler) { r.inputEvents.Add(1) }},
		{name: "it ended with an error or a status write cut short", change: func(r *Reconciler) { r.run.clean = false }},
		{name: "it ended a second ago", change: func(r *Reconciler) { r.run.ended = now.Add(-lastRunFresh) }},
		{name: "this replica was elected since", change: func(r *Reconciler) { r.leader.elected.Store(true) }},
		{name: "the own ports moved", change: func(r *Reconciler) {
			r.opts.OwnPorts = func() map[uint32]string { return map[uint32]string{19000: "envoy admin"} }
		}},
		{name: "a certificate it checked expired by the reconciler's clock", change: func(r *Reconciler) { r.last.result.ValidUntil = clock }},
		{name: "no translation to stand on", change: func(r *Reconciler) { r.last = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{leader: newLeadership(), opts: Options{Clock: func() time.Time { return clock }}}
			r.inputEvents.Store(7)
			r.otherWakes.Store(3)
			r.last = &lastTranslation{events: 7, result: translate.Result{ValidUntil: clock.Add(time.Hour)}}
			r.run = lastRun{clean: true, others: 3, events: 7, ended: now.Add(-10 * time.Millisecond)}
			tt.change(r)
			requeue, stands := r.nothingNew(now)
			if stands != tt.stands || requeue != tt.requeue {
				t.Errorf("nothingNew = %v, %v; want %v, %v", requeue, stands, tt.requeue, tt.stands)
			}
		})
	}
}

func TestRanRecordsWhatTheNextReconcileChecks(t *testing.T) {
	r := &Reconciler{leader: newLeadership(), opts: Options{Clock: time.Now}}
	r.ran(true, 3, 0)
	if r.run.clean {
		t.Error("a reconcile without a translation (the DNS guard warming up) is recorded clean")
	}
	r.last = &lastTranslation{events: 9}
	before := time.Now()
	r.ran(true, 4, time.Second)
	if !r.run.clean || r.run.others != 4 || r.run.events != 9 {
		t.Errorf("recorded %+v, want clean, others 4, events 9", r.run)
	}
	if r.run.due.Before(before.Add(time.Second)) {
		t.Errorf("due %v, want a second after %v", r.run.due, before)
	}
}

// TestAnInputEventAlreadyReadCostsNoSecondReconcile: a second Backend, created while the
// reconcile the first one's create started waits for its first DNS answer, is gathered
// by that reconcile; the reconcile its event queued returns at once.
func TestAnInputEventAlreadyReadCostsNoSecondReconcile(t *testing.T) {
	const ns = "already-read"
	const host = "slow.already-read.test"
	w, reg := slowAnswerWorld(t, host)
	w.apply(fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns))
	count := func(how string) func() float64 {
		return func() float64 {
			return max(metricValue(t, reg, metricReconciles, map[string]string{"translation": how}), 0) // -1: none yet
		}
	}
	unchanged := settledCount(t, count(translationNone))

	backend := func(name string) string {
		return fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: %s, namespace: %s}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: %s}
    ports: [{name: http, port: 9, protocol: HTTP}]
`, name, ns, host)
	}
	w.apply(backend("first"))
	awaitQuestion(t, w, host)
	w.apply(backend("second"))
	for _, name := range []string{"first", "second"} {
		b := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "ResolvedRefs", "True", "ResolvedRefs")
	}
	if n := settledCount(t, count(translationNone)) - unchanged; n < 1 {
		t.Errorf("%v reconciles returned at once; want the one the second create queued", n)
	}
}
