package controllers

import (
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// Reusing the last translation. Of the three or so reconciles a change costs, only the
// first has new input: the xDS server's notice that it published, and Envoy's ACK, wake
// the reconciler to mark Programmed and move staging on, and periodic requeues (bind
// retries, staging patience) change nothing translation reads either. Gathering and
// translating ten thousand Backends again for them took most of a reconcile, on the
// CPUs Envoy needed to apply the change. A translation is reused when, since it ran,
// no watched object changed (inputEvents counts the events of every object watch that
// feeds translation), the DNS guard's answers are the same (compared, not counted: a
// new name's first answer, which translation waited for, signals a change after the
// translation already holds it), the own ports are the same, and
// no certificate it checked has expired or become valid (translate.Result.ValidUntil).
// Pod events are not among the inputs: they change caller tables only, which the
// callers reconcile keeps in r.callers and publish applies.
type lastTranslation struct {
	events uint64
	own    map[uint32]string
	addrs  egress.Addresses
	res    *egress.Resources
	result translate.Result
}

// reusable returns the last translation when it still stands for the inputs. The DNS
// guard's answers are asked for last, only when everything else allows reuse: copying
// them costs milliseconds at ten thousand names, on the way of every change.
func (r *Reconciler) reusable(events uint64, own map[uint32]string, addrs func() egress.Addresses, now time.Time) (*egress.Resources, translate.Result, bool) {
	last := r.last
	if last == nil || last.events != events || !maps.Equal(last.own, own) {
		return nil, translate.Result{}, false
	}
	if until := last.result.ValidUntil; !until.IsZero() && !now.Before(until) {
		return nil, translate.Result{}, false
	}
	if !sameResolutions(last.addrs, addrs()) {
		return nil, translate.Result{}, false
	}
	return last.res, markable(last.result), true
}

// remember keeps a translation for reuse. It holds no pods: the gatherer does not
// list them (caller tables come from the pod index, pod_index.go).
func (r *Reconciler) remember(events uint64, own map[uint32]string, addrs egress.Addresses, res *egress.Resources, result translate.Result) {
	r.last = &lastTranslation{events: events, own: own, addrs: addrs, res: res, result: markable(result)}
}

// markable is result with its own copies of what a reconcile changes after translation:
// the Gateway statuses (Programmed, listeners, addresses), edited in place, so the
// remembered translation keeps saying what translation said. The maps of HTTPRoute and
// Backend statuses are shared: refuseRoutes and refuseClusters copy theirs before they
// write, and the Backend statuses marked Programmed go into a map of the marks' own
// (backendMarks.view). Copying the Backends' map here was 0.35 MB of every change at
// 10,000 Backends.
func markable(result translate.Result) translate.Result {
	st := result.Statuses
	st.Gateways = make(map[string]*gwapiv1.GatewayStatus, len(result.Statuses.Gateways))
	for k, g := range result.Statuses.Gateways {
		st.Gateways[k] = g.DeepCopy()
	}
	result.Statuses = st
	return result
}

// backendMarks are the Backend statuses markProgrammed made, by Backend: the status
// translation made (Programmed Pending), the Programmed condition that replaced Pending,
// and the copy that carries it. A reconcile that marks the same translated status the
// same way gets the same copy back, so the status writer's check of what it last
// verified (verifiedStatuses) is a pointer comparison instead of a deep one: at 10,000
// Backends the deep comparisons were a quarter of a reconcile's CPU.
//
// view is the map of Backend statuses a reconcile writes: translation's, each Pending
// one replaced by its mark. It is kept from one reconcile to the next and written over,
// so that marking allocates nothing where nothing changed; only the status writer and
// the metrics read it, before the next reconcile.
type backendMarks struct {
	m     map[string]*backendMark
	view  map[string]*egressv1alpha1.BackendStatus
	round uint64
}

// mark returns the view of translated: each status as translation made it, or the
// copy with its mark where markOf gives one. The view is written over, translated
// left as it was.
func (b *backendMarks) mark(translated map[string]*egressv1alpha1.BackendStatus, markOf func(key string, st *egressv1alpha1.BackendStatus) (programmedMark, bool)) map[string]*egressv1alpha1.BackendStatus {
	if b.view == nil {
		b.view = make(map[string]*egressv1alpha1.BackendStatus, len(translated))
	}
	for key, st := range translated {
		if m, ok := markOf(key, st); ok {
			st = b.backend(key, st, m)
		}
		b.view[key] = st
	}
	if len(b.view) > len(translated) { // a Backend translated before is gone
		for key := range b.view {
			if _, ok := translated[key]; !ok {
				delete(b.view, key)
			}
		}
	}
	return b.view
}

type backendMark struct {
	src   *egressv1alpha1.BackendStatus
	mark  programmedMark
	out   *egressv1alpha1.BackendStatus
	round uint64
}

// programmedMark is what replaces a Pending Programmed condition.
type programmedMark struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// backend returns src with its Programmed condition set to mark, as a copy: the one
// made for the same src and mark before, or a new one.
func (b *backendMarks) backend(key string, src *egressv1alpha1.BackendStatus, mark programmedMark) *egressv1alpha1.BackendStatus {
	if b.m == nil {
		b.m = map[string]*backendMark{}
	}
	if e := b.m[key]; e != nil && e.src == src && e.mark == mark {
		e.round = b.round
		return e.out
	}
	out := *src
	out.Conditions = slices.Clone(src.Conditions)
	c := findCond(out.Conditions, egressv1alpha1.ConditionProgrammed)
	c.Status, c.Reason, c.Message = mark.status, mark.reason, mark.message
	b.m[key] = &backendMark{src: src, mark: mark, out: &out, round: b.round}
	return &out
}

// sweep ends a reconcile's marking: marks it did not use go.
func (b *backendMarks) sweep() {
	for k, e := range b.m {
		if e.round != b.round {
			delete(b.m, k)
		}
	}
	b.round++
}

// sameResolutions compares what translation reads of the DNS guard's answers.
func sameResolutions(a, b egress.Addresses) bool {
	return dnsguard.SameAddresses(a, b) || maps.EqualFunc(a, b, egress.SameForTranslation)
}
