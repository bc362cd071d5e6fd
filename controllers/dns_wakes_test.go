package controllers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestUnseenChangeIsWhatTheLastTranslationDidNotRead(t *testing.T) {
	var count, seen atomic.Uint64
	var translating atomic.Bool
	news := unseenChange(context.Background(), count.Load, &seen, &translating)
	// finish ends the translation under way after 50 ms, having read the count or not.
	finish := func(read bool) {
		time.AfterFunc(50*time.Millisecond, func() {
			if read {
				seen.Store(count.Load())
			}
			translating.Store(false)
		})
	}

	count.Store(3)
	seen.Store(2)
	if !news(struct{}{}) {
		t.Fatal("an answer the last translation did not read is no news")
	}

	// A first answer signalled while the translation that waits for it runs: that
	// translation reads it, so it is no news once the translation is done.
	translating.Store(true)
	count.Store(4)
	start := time.Now() // before the timer starts, so that it cannot run ahead of start
	finish(true)
	if news(struct{}{}) {
		t.Fatal("an answer the translation under way read is news")
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("decided after %s, before the translation under way ended", took)
	}

	// A translation that ends without reading the answer (the guard warming up, say)
	// leaves it news.
	translating.Store(true)
	count.Store(5)
	finish(false)
	if !news(struct{}{}) {
		t.Fatal("an answer no translation read is no news")
	}
}

func TestUnseenChangeGivesUpWhenTheManagerStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var count, seen atomic.Uint64
	var translating atomic.Bool
	translating.Store(true)
	count.Store(1)
	time.AfterFunc(20*time.Millisecond, cancel)
	if unseenChange(ctx, count.Load, &seen, &translating)(struct{}{}) {
		t.Fatal("news after the manager stopped")
	}
}
