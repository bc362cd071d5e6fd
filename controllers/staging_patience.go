package controllers

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/xds"
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

// warnLateEnvoys tells, once per wait, on the Gateway which Envoys did not
// acknowledge, and closes the streams of those late for KickAfter (at most once per
// KickInterval each): a stream that stopped carrying updates is mended by Envoy's
// reconnection, which asks for the whole configuration again (xds.Server.Kick).
func (r *Reconciler) warnLateEnvoys(gateway string, obj *gwapiv1.Gateway) {
	st := r.opts.XDS.Status(gateway)
	late := lateEnvoys(st)
	r.kickLate(gateway, late)
	if r.recorder == nil || obj == nil || !r.writes() {
		return
	}
	r.recorder.Event(obj, corev1.EventTypeWarning, "EnvoyNotAcknowledging", fmt.Sprintf(
		"Envoy %s did not acknowledge configuration %s within %s; the Gateway's other Envoys get route changes without waiting for it",
		strings.Join(late, ", "), st.Version, StagingPatience))
}

// lateEnvoys are the connected Envoys that have not acknowledged every type's
// published version.
func lateEnvoys(st xds.GatewayStatus) []string {
	var late []string
	for _, e := range st.Envoys {
		for typeURL, ts := range e.Types {
			if ts.Acked != st.TypeVersion(typeURL) { // an unchanged type keeps an older version
				late = append(late, e.NodeID)
				break
			}
		}
	}
	return late
}

// KickAfter is how long an Envoy must have been late (seen late at two staging waits
// this far apart) before its stream is closed: a slow but healthy Envoy on a busy node
// catches up by itself, and closing its stream would only make it start over.
var KickAfter = 20 * time.Second

// KickInterval is the least time between two closings of one Envoy's xDS stream.
const KickInterval = time.Minute

// kickLate closes the streams of the gateway's Envoys that have stayed late for
// KickAfter, at most once per KickInterval each, and forgets the ones that caught up.
func (r *Reconciler) kickLate(gateway string, late []string) {
	now := r.opts.Clock()
	stillLate := map[string]bool{}
	for _, node := range late {
		key := gateway + "\x00" + node
		stillLate[key] = true
		first, ok := r.lateSince[key]
		if !ok {
			r.lateSince[key] = now
			continue
		}
		if last, ok := r.kicked[key]; now.Sub(first) < KickAfter || (ok && now.Sub(last) < KickInterval) {
			continue
		}
		if r.opts.XDS.Kick(gateway, node) > 0 {
			r.kicked[key] = now
			delete(r.lateSince, key)
		}
	}
	for key := range r.lateSince {
		if strings.HasPrefix(key, gateway+"\x00") && !stillLate[key] {
			delete(r.lateSince, key)
		}
	}
	for key, at := range r.kicked {
		if now.Sub(at) >= KickInterval {
			delete(r.kicked, key)
		}
	}
}
