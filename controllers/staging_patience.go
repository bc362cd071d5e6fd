package controllers

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// StagingPatience is how long make-before-break staging (staging.go) waits for every
// connected Envoy of a Gateway to run a step before it goes on without the ones that
// have not. An Envoy that never acknowledges (stopped, overloaded, partitioned from
// xDS but still connected) would otherwise hold every later route change of the
// Gateway back, and a deleted route of one tenant would keep serving.
//
// Going on is safe for the Envoys that do acknowledge: they run the step, so they hold
// every new cluster before the routes that need them arrive. A late Envoy gets the
// routes and clusters of the latest snapshot together when it catches up; it may answer
// 503 "no cluster" for a moment then, which is no worse than what it serves while stuck.
const StagingPatience = 5 * time.Second

// waitedTooLong records that staging is waiting for a Gateway's Envoys and tells
// whether it has waited longer than StagingPatience. The first wait starts the clock;
// settled clears it.
func (r *Reconciler) waitedTooLong(gateway string, settled bool) bool {
	if settled {
		delete(r.holding, gateway)
		return false
	}
	now := r.opts.Clock()
	since, ok := r.holding[gateway]
	if !ok {
		r.holding[gateway] = now
		return false
	}
	return now.Sub(since) >= StagingPatience
}

// requeueWhileHolding is when the reconciler must look again although no event may
// come: a stuck Envoy sends no acknowledgement to wake it.
func (r *Reconciler) requeueWhileHolding() time.Duration {
	if len(r.holding) == 0 {
		return 0
	}
	return StagingPatience
}

// warnLateEnvoys tells, once per wait, on the Gateway which Envoys did not acknowledge.
func (r *Reconciler) warnLateEnvoys(gateway string, obj *gwapiv1.Gateway) {
	if r.recorder == nil || obj == nil {
		return
	}
	st := r.opts.XDS.Status(gateway)
	var late []string
	for _, e := range st.Envoys {
		for typeURL, ts := range e.Types {
			if ts.Acked != st.TypeVersion(typeURL) { // an unchanged type keeps an older version
				late = append(late, e.NodeID)
				break
			}
		}
	}
	r.recorder.Event(obj, corev1.EventTypeWarning, "EnvoyNotAcknowledging", fmt.Sprintf(
		"Envoy %s did not acknowledge configuration %s within %s; the Gateway's other Envoys get route changes without waiting for it",
		strings.Join(late, ", "), st.Version, StagingPatience))
}
