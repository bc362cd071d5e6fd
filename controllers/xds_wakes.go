package controllers

import (
	"context"
	"time"
)

// Envoy acknowledges a change type by type: the clusters at once, a large route table
// after it has built it (a couple of hundred milliseconds at 10,000 hosts on two
// cores). Each acknowledgement is a change notice of the xDS server, and each woke a
// reconcile that could only find the change half applied, and that competed with the
// applying Envoy for the CPUs. A notice is now held back while the Gateway's Envoys
// are still applying what they were sent, until they have answered all of it or for
// xdsWakeHold at most (an Envoy that stopped answering must not keep what the others
// acknowledged out of the statuses). A rejection passes at once (xds.Server.Applying).
const (
	xdsWakeHold = 500 * time.Millisecond
	xdsWakePoll = 5 * time.Millisecond
)

// newsOnly passes on the notices of in that come with news (xds.Server.News): a notice
// with the count the last one passed saw was only a publish's. Every publish is the
// reconciler's own, and the reconcile that publishes reads the xDS status after it;
// woken by its own notice, the next reconcile found nothing new and still published,
// marked and checked every status again, as costly as the change itself at 10,000
// Backends. The callers reconcile, which publishes outside a reconcile, wakes the
// reconciler itself (callersPublished). A notice that passes stands for all the news
// counted before it, whichever Gateway they concern: a wake-up is for every Gateway.
func newsOnly(ctx context.Context, in <-chan string, news func() uint64) <-chan string {
	out := make(chan string)
	go func() {
		var seen uint64
		for {
			var gateway string
			select {
			case <-ctx.Done():
				return
			case gateway = <-in:
			}
			n := news()
			if n == seen {
				continue
			}
			seen = n
			select {
			case <-ctx.Done():
				return
			case out <- gateway:
			}
		}
	}()
	return out
}

// heldWhileApplying passes on the Gateway names of in as wake-ups, each once its
// Gateway's Envoys are no longer applying or it has been held for hold.
func heldWhileApplying(ctx context.Context, in <-chan string, applying func(gateway string) bool, hold time.Duration) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		held := map[string]time.Time{} // Gateway → when its first held notice came
		poll := time.NewTimer(xdsWakePoll)
		poll.Stop()
		for {
			select {
			case <-ctx.Done():
				poll.Stop()
				return
			case gateway := <-in:
				if _, ok := held[gateway]; !ok {
					held[gateway] = time.Now()
				}
			case <-poll.C:
			}
			if releaseHeld(held, applying, hold, time.Now()) {
				select {
				case out <- struct{}{}:
				default: // one pending wake-up is enough: every reconcile looks at every Gateway
				}
			}
			if len(held) > 0 {
				poll.Reset(xdsWakePoll)
			}
		}
	}()
	return out
}

// releaseHeld drops the Gateways whose notices may pass now and tells whether any did.
func releaseHeld(held map[string]time.Time, applying func(string) bool, hold time.Duration, now time.Time) bool {
	released := false
	for gateway, since := range held {
		if now.Sub(since) >= hold || !applying(gateway) {
			delete(held, gateway)
			released = true
		}
	}
	return released
}
