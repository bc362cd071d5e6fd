package controllers

import (
	"maps"
	"time"
)

// A reconcile that can know that nothing changed since the last one returns at once.
// Objects are applied together (a Backend and its HTTPRoute milliseconds apart); the
// reconcile the first event starts gathers the second too (gatherAnswered), but the
// second event, coming while that reconcile ran, queued one more. That one found the
// translation reusable and published nothing new, yet its publish, marks and status
// check cost some 100 ms of CPU at 10,000 Backends, on the two cores where Envoy was
// applying the change (2026-11-29).
//
// The last reconcile stands for the present when all of this holds:
//   - it ran to the end: no error (controller-runtime retries those), no status write
//     cut short (status_yield.go), not held for the DNS guard's warm-up;
//   - every wake-up since it began was an input event its translation already read
//     (otherWakes counts the rest: Envoy's answers, the DNS guard's news, the lease,
//     our NetworkPolicies; the callers reconcile clears lastRun when it publishes);
//   - the requeue it asked for (staging patience, bind retries, fleet reports, a
//     certificate's validity) is not due, and no certificate it checked changed
//     validity by the reconciler's clock;
//   - it ended less than lastRunFresh ago; this replica's leadership is what it was and
//     the own ports what its translation read.
//
// The reconcile that returns asks for the same requeue, so what the last one waited for
// still comes.
type lastRun struct {
	// clean: the reconcile ran to the end (above).
	clean bool
	// others is otherWakes when it began; events is the input events its translation read.
	others, events uint64
	// due is when the requeue it asked for falls due (zero: none); ended is when it
	// returned.
	due, ended time.Time
	writes     bool
}

// lastRunFresh bounds how old a reconcile may be to stand for the present: the
// reconcile this saves starts right after the one before it, and a gap means something
// woke the reconciler that these rules did not foresee.
const lastRunFresh = time.Second

// nothingNew tells whether the last reconcile still stands for the present, and how
// long until the requeue it asked for.
func (r *Reconciler) nothingNew(now time.Time) (time.Duration, bool) {
	run := r.run
	switch {
	case !run.clean, r.last == nil, now.Sub(run.ended) >= lastRunFresh:
		return 0, false
	case r.otherWakes.Load() != run.others, r.inputEvents.Load() != run.events:
		return 0, false
	case !run.due.IsZero() && !now.Before(run.due):
		return 0, false
	case r.writes() != run.writes || !maps.Equal(r.ownPorts(), r.last.own):
		return 0, false
	}
	if until := r.last.result.ValidUntil; !until.IsZero() && !r.opts.Clock().Before(until) {
		return 0, false
	}
	if run.due.IsZero() {
		return 0, true
	}
	return max(run.due.Sub(now), time.Millisecond), true
}

// ran records a reconcile that began with others other wake-ups counted and returned
// after, clean or not, asking for requeue.
func (r *Reconciler) ran(clean bool, others uint64, requeue time.Duration) {
	now := time.Now()
	r.run = lastRun{clean: clean && r.last != nil, others: others, ended: now, writes: r.writes()}
	if r.last != nil {
		r.run.events = r.last.events
	}
	if requeue > 0 {
		r.run.due = now.Add(requeue)
	}
}
