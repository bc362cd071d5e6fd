package controllers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestUnseenChangesPassesOnlyWhatTheLastTranslationDidNotRead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := make(chan struct{})
	var version, seen atomic.Uint64
	var translating atomic.Bool
	out := unseenChanges(ctx, in, version.Load, &seen, &translating)
	woke := func() bool {
		select {
		case <-out:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}

	version.Store(3)
	seen.Store(2)
	in <- struct{}{}
	if !woke() {
		t.Fatal("an answer the last translation did not read woke nothing")
	}

	// A first answer signalled while the translation that waits for it runs: that
	// translation reads it, so the signal is no news once it is done.
	translating.Store(true)
	version.Store(4)
	in <- struct{}{}
	if woke() {
		t.Fatal("woke while a translation that may read the answer still ran")
	}
	seen.Store(4)
	translating.Store(false)
	if woke() {
		t.Fatal("woke for an answer the translation read")
	}

	// A translation that ends without reading the answer (the guard warming up, say)
	// leaves it news.
	translating.Store(true)
	version.Store(5)
	in <- struct{}{}
	translating.Store(false)
	if !woke() {
		t.Fatal("an answer no translation read woke nothing")
	}
}
