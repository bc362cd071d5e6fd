package translate

import (
	"k8s.io/apimachinery/pkg/types"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// The status of a Backend whose translation is a unit is a unit as well: it is a
// function of that unit (spec, generation, TLS outcome), of what the routes made of the
// Backend (referenced, tunneled, streamed, the first bad port reference) and of the DNS
// guard's whole answer for its name (state, message, blocked addresses: more than the
// vetted addresses the clusters use). When none of these changed, the translation hands
// out the very status it handed out last time. Beyond saving the work, the same pointer
// lets the status writer tell an unchanged status by comparing pointers, where ten
// thousand deep comparisons cost tens of milliseconds per change.

// backendStatusFacts is what a unit Backend's status is computed from, beyond the unit.
type backendStatusFacts struct {
	unit                           *unitEntry[backendUnit]
	referenced, tunneled, streamed bool
	portProblem                    string
	known                          bool // the DNS guard has an answer for the name
	resolution                     egress.Resolution
}

func (f *backendStatusFacts) same(o *backendStatusFacts) bool {
	return f.unit == o.unit && f.referenced == o.referenced && f.tunneled == o.tunneled && f.streamed == o.streamed &&
		f.portProblem == o.portProblem && f.known == o.known && egress.SameForTranslation(f.resolution, o.resolution)
}

// statusEntry is a Backend status, the facts it was computed from and the last epoch
// that used it. The status is never modified once handed out.
type statusEntry struct {
	used  uint64
	facts backendStatusFacts
	out   *egressv1alpha1.BackendStatus
}

// backendStatusOf returns the Backend's status: the last one when it is a unit's and
// nothing it is computed from changed, else a new one.
func (t *translator) backendStatusOf(n types.NamespacedName, tb *translatedBackend) *egressv1alpha1.BackendStatus {
	if tb.unit == nil {
		return t.backendStatus(tb)
	}
	facts := backendStatusFacts{unit: tb.unit, referenced: tb.referenced, tunneled: tb.tunneled, streamed: tb.streamed}
	if tb.portProblem != nil {
		facts.portProblem = tb.portProblem.reason + ": " + tb.portProblem.msg
	}
	if tb.dest.hostname != "" {
		facts.resolution, facts.known = t.addrs[tb.dest.hostname]
	}
	if e := t.cache.backendStatus(n, t.epoch); e != nil && e.facts.same(&facts) {
		return e.out
	}
	st := t.backendStatus(tb)
	t.cache.storeBackendStatus(n, &statusEntry{used: t.epoch, facts: facts, out: st})
	return st
}
