package controllers

import (
	"maps"
	"slices"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// Reusing the last translation. Of the three or so reconciles a change costs, only the
// first has new input: the xDS server's notice that it published, and Envoy's ACK, wake
// the reconciler to mark Programmed and move staging on, and periodic requeues (bind
// retries, staging patience) change nothing translation reads either. Gathering and
// translating ten thousand Backends again for them took most of a reconcile, on the
// CPUs Envoy needed to apply the change. A translation is reused when, since it ran,
// no watched object changed (inputEvents counts the events of every watch that feeds
// translation), the DNS guard's answers are the same, the own ports are the same, and
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

// reusable returns the last translation when it still stands for the inputs.
func (r *Reconciler) reusable(events uint64, own map[uint32]string, addrs egress.Addresses, now time.Time) (*egress.Resources, translate.Result, bool) {
	last := r.last
	if last == nil || last.events != events || !maps.Equal(last.own, own) || !sameResolutions(last.addrs, addrs) {
		return nil, translate.Result{}, false
	}
	if until := last.result.ValidUntil; !until.IsZero() && !now.Before(until) {
		return nil, translate.Result{}, false
	}
	return last.res, markable(last.result), true
}

// remember keeps a translation for reuse, without the pods (only caller tables read
// them, and those the callers reconcile keeps current).
func (r *Reconciler) remember(events uint64, own map[uint32]string, addrs egress.Addresses, res *egress.Resources, result translate.Result) {
	kept := *res
	kept.Pods = nil
	r.last = &lastTranslation{events: events, own: own, addrs: addrs, res: &kept, result: markable(result)}
}

// markable is result with its own copies of what markProgrammed changes in place (the
// Programmed conditions of Gateways, their listeners and Backends), so the remembered
// translation keeps saying Pending where translation said so.
func markable(result translate.Result) translate.Result {
	st := result.Statuses
	st.Gateways = make(map[string]*gwapiv1.GatewayStatus, len(result.Statuses.Gateways))
	for k, g := range result.Statuses.Gateways {
		st.Gateways[k] = g.DeepCopy()
	}
	st.Backends = make(map[string]*egressv1alpha1.BackendStatus, len(result.Statuses.Backends))
	for k, b := range result.Statuses.Backends {
		c := *b
		c.Conditions = slices.Clone(b.Conditions)
		st.Backends[k] = &c
	}
	result.Statuses = st
	return result
}

// sameResolutions compares what translation reads of the DNS guard's answers: the
// state, message, and the vetted (with since when) and blocked addresses. Expires moves
// with every refresh and is not read.
func sameResolutions(a, b egress.Addresses) bool {
	return maps.EqualFunc(a, b, func(x, y egress.Resolution) bool {
		return x.State == y.State && x.Message == y.Message && slices.Equal(x.Blocked, y.Blocked) &&
			slices.EqualFunc(x.Vetted, y.Vetted, func(v, w egress.VettedAddress) bool { return v.IP == w.IP && v.Since.Equal(w.Since) })
	})
}
