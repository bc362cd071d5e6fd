package controllers

import (
	"context"
	"sync/atomic"
	"time"
)

// The DNS guard signals every change of its answers. A new FQDN Backend's first answer
// comes while the translation that added the name waits for it (AwaitFirstAnswers), so
// that translation publishes the answer; its signal still woke another reconcile,
// which found nothing new and, at 10,000 Backends, spent some 100 ms of CPU beside the
// Envoy applying the change. A signal now passes only when the guard has signalled
// changes since the last translation in use read its answers (dnsguard.Store.Signalled).
// While a translation runs, a signal waits for it (at most dnsWakeWait), as it may be
// about to read the answers signalled.
const (
	dnsWakeWait = 5 * time.Second
	dnsWakePoll = 2 * time.Millisecond
)

// unseenDNSChange tells whether a signal of the DNS guard is news to the reconciler.
func (r *Reconciler) unseenDNSChange(ctx context.Context) func(struct{}) bool {
	return unseenChange(ctx, r.opts.DNS.Signalled, &r.dnsSeen, &r.translating)
}

// unseenChange: a signal is news when the count of changes, read once no translation
// runs, is past seen (the count the last translation read).
func unseenChange(ctx context.Context, count func() uint64, seen *atomic.Uint64, translating *atomic.Bool) func(struct{}) bool {
	return func(struct{}) bool {
		return awaitIdle(ctx, translating, dnsWakeWait) && count() > seen.Load()
	}
}

// awaitIdle waits until busy is clear or for at most max; false when ctx ended.
func awaitIdle(ctx context.Context, busy *atomic.Bool, max time.Duration) bool {
	deadline := time.Now().Add(max)
	for busy.Load() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(dnsWakePoll):
		}
	}
	return ctx.Err() == nil
}
