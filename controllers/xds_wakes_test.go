package controllers

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestReleaseHeldPassesGatewaysDoneApplyingOrHeldTooLong(t *testing.T) {
	now := time.Unix(1000, 0)
	const hold = 500 * time.Millisecond
	tests := []struct {
		name     string
		held     map[string]time.Time
		applying map[string]bool
		want     bool
		left     []string
	}{
		{"nothing held", map[string]time.Time{}, nil, false, nil},
		{"an Envoy still applying keeps the notice", map[string]time.Time{"gw/a": now.Add(-100 * time.Millisecond)}, map[string]bool{"gw/a": true}, false, []string{"gw/a"}},
		{"Envoys done applying release it", map[string]time.Time{"gw/a": now}, map[string]bool{}, true, nil},
		{"held for hold releases it though Envoy still applies", map[string]time.Time{"gw/a": now.Add(-hold)}, map[string]bool{"gw/a": true}, true, nil},
		{"only the Gateway done is released", map[string]time.Time{"gw/a": now, "gw/b": now}, map[string]bool{"gw/b": true}, true, []string{"gw/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := releaseHeld(tt.held, func(gw string) bool { return tt.applying[gw] }, hold, now)
			if got != tt.want {
				t.Errorf("released = %v, want %v", got, tt.want)
			}
			if left := slices.Sorted(maps.Keys(tt.held)); !slices.Equal(left, tt.left) {
				t.Errorf("still held %v, want %v", left, tt.left)
			}
		})
	}
}

func TestHeldWhileApplyingWakesOnceEnvoyHasAnswered(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := make(chan string)
	var applying atomic.Bool
	applying.Store(true)
	out := heldWhileApplying(ctx, in, func(string) bool { return applying.Load() }, time.Hour)
	in <- "gw/a" // a first type acknowledged, the route table still being applied
	select {
	case <-out:
		t.Fatal("woke while the Envoy was still applying")
	case <-time.After(50 * time.Millisecond):
	}
	applying.Store(false) // the last type acknowledged
	select {
	case <-out:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up once the Envoy had answered everything")
	}
}

func TestHeldWhileApplyingWakesAfterHoldWhenEnvoyNeverAnswers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := make(chan string)
	out := heldWhileApplying(ctx, in, func(string) bool { return true }, 100*time.Millisecond)
	start := time.Now()
	in <- "gw/a"
	select {
	case <-out:
		if took := time.Since(start); took < 100*time.Millisecond {
			t.Errorf("woke after %s, before the hold", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up after the hold")
	}
}

// TestNewsOnlyDropsNoticesOfPublishesAlone sends notices in turn with the news count
// as the xDS server would have it then: a notice passes only when the count moved since
// the last one that passed.
func TestNewsOnlyDropsNoticesOfPublishesAlone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := make(chan string)
	var news atomic.Uint64
	out := newsOnly(ctx, in, news.Load)
	steps := []struct {
		name  string
		count uint64 // News when the notice is read
		pass  bool
	}{
		{"a publish before any Envoy", 0, false},
		{"an Envoy connected", 1, true},
		{"a publish after it", 1, false},
		{"two acknowledgements, one notice", 3, true},
		{"another publish", 3, false},
		{"a rejection", 4, true},
	}
	for _, step := range steps {
		news.Store(step.count)
		in <- "gw/a"
		select {
		case got := <-out:
			if !step.pass {
				t.Fatalf("%s: the notice of %s passed", step.name, got)
			}
		case <-time.After(50 * time.Millisecond):
			if step.pass {
				t.Fatalf("%s: the notice was dropped", step.name)
			}
		}
	}
}
