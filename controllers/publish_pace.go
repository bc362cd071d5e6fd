package controllers

import (
	"time"
)

// Publish pacing. A Gateway gets a new snapshot only once its Envoys acknowledged the
// last one, or publishHold after it was published, whichever comes first; the
// reconcile that skips it asks to run again when the hold ends, and Envoy's ACK wakes
// the reconciler before that. While status writes held every reconcile up (seconds, at
// 1,000 new Backends), Envoy had time between snapshots; with the writes in the
// background (status_background.go) a burst of creates published a snapshot every few
// tens of milliseconds, each a full state-of-the-world update of every cluster, and
// Envoy, never done with one before the next, acknowledged none for 25 s. The hold is
// per Gateway and short, so a slow or stuck Envoy delays its own Gateway's next snapshot
// by at most that much and never another Gateway's; an Envoy that rejected the last
// snapshot holds nothing back (NACK isolation needs the next one at once).
var publishHold = time.Second // a variable for tests

// publishPaused tells whether gateway's next snapshot must wait, and for how long.
func (r *Reconciler) publishPaused(gateway string, now time.Time) (bool, time.Duration) {
	at, ok := r.publishedAt[gateway]
	if !ok || now.Sub(at) >= publishHold {
		return false, 0
	}
	st := r.opts.XDS.Status(gateway)
	if len(st.Envoys) == 0 || r.envoysRunLatest(gateway) {
		return false, 0
	}
	if nack, _ := st.Rejection(); nack != nil || r.searching(gateway) {
		return false, 0
	}
	return true, publishHold - now.Sub(at)
}

// notePublished records when gateway's published version last changed.
func (r *Reconciler) notePublished(gateway, version string, now time.Time) {
	if r.publishedVersion[gateway] != version {
		r.publishedVersion[gateway], r.publishedAt[gateway] = version, now
	}
}

// pacedRequeue is how long until the first paused Gateway may publish (0: none is).
func (r *Reconciler) pacedRequeue() time.Duration { return r.paced }
