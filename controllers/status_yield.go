package controllers

import (
	"time"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// A status write yields to newer work. Statuses are written after the snapshot is
// published, on the reconciler's goroutine: while a write runs, no change is translated.
// After a burst (1,000 Backends and routes created at once) a write has thousands of
// objects to store, seconds of API calls, and meanwhile the objects created since wait
// to be translated and Envoy's acknowledgement waits to be marked: each Backend was
// written Programmed=Pending, then again Programmed=True once that reconcile came.
//
// So a write that has run statusWriteShare and learns that the reconciler was woken
// since its reconcile began (a watched object changed, the DNS guard answered, an Envoy
// acknowledged or was refused a configuration, the lease moved) stops handing out
// objects; the writes in flight finish. The reconcile that follows translates the news
// and writes what is left from its newer statuses: objects already written are verified
// and skipped, the rest get statuses that are more often final. Each write still stores
// statusWriteShare's worth of objects first, so statuses keep coming under steady churn.

// statusWriteShare is how long a status write runs before it may yield.
const statusWriteShare = 250 * time.Millisecond

// yieldAfter returns the question a status write asks before each object: whether the
// reconciler was woken since the reconcile began (woken is the count of wake-ups then)
// and the write has had its share. Wake-ups are counted by the event handlers
// (SetupWithManager).
func (r *Reconciler) yieldAfter(woken uint64) func() bool {
	start := time.Now()
	return func() bool {
		return r.wakeups.Load() != woken && time.Since(start) >= statusWriteShare
	}
}

// pendingLast splits the Backends to write into those whose Programmed condition says
// something final (True, or False for a reason other than Pending) and those waiting
// for Envoy. The write hands out the final ones in turns with the routes, and the
// Pending ones last, where a write that yields seldom gets: a Pending Backend is the
// one whose status is most likely to change again before long.
//
// The Backends used to come after every route. While a burst of creates went on, every
// write yielded within its share to the next translation before it reached them: of
// 1,000 Backends created at once, which Envoy took one after the other, 9 to 25 were
// written by the last create and the rest in one wave after it (six to ten seconds of
// writes on two cores). Handed out before the routes, the Backends came along and the
// routes waited instead.
func pendingLast(keys []string, wants map[string]*egressv1alpha1.BackendStatus) (settled, pending []string) {
	for _, key := range keys {
		if c := findCond(wants[key].Conditions, egressv1alpha1.ConditionProgrammed); c != nil && c.Reason == egressv1alpha1.ReasonPending {
			pending = append(pending, key)
		} else {
			settled = append(settled, key)
		}
	}
	return settled, pending
}
