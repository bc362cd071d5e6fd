package controllers

import (
	"time"

	"github.com/portcullis-io/portcullis/egress"
)

// WarmupPatience bounds how long a starting replica waits for the DNS guard's first
// answers before it publishes anyway.
const WarmupPatience = 10 * time.Second

// warmupRetry is how soon a reconcile held by warm-up runs again (a DNS answer also
// wakes it).
const warmupRetry = 250 * time.Millisecond

// warming reports whether this replica should hold its first publication: some outside
// name has had no answer yet. Envoys that reconnect to a replica that just started
// (a rollout, a failover) keep the configuration they run until it publishes; one
// published before the names resolve would empty every FQDN Backend's endpoints and
// fail requests that the old configuration serves. Once it has published, it never
// waits again: later Backends are Pending on their own, as they should be.
func (r *Reconciler) warming(addrs egress.Addresses) bool {
	if r.warm {
		return false
	}
	if r.started.IsZero() {
		r.started = time.Now()
	}
	if time.Since(r.started) < WarmupPatience {
		for _, res := range addrs {
			if res.State == egress.ResolutionPending {
				return true
			}
		}
	}
	r.warm = true
	return false
}
