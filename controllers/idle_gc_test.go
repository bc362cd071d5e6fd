package controllers

import (
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestWorthCollecting(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name string
		heap heapState
		want bool
	}{
		{"half the headroom allocated", heapState{live: 100 * mib, goal: 200 * mib, objects: 150 * mib}, true},
		{"most of it allocated", heapState{live: 100 * mib, goal: 200 * mib, objects: 190 * mib}, true},
		{"less than half allocated", heapState{live: 100 * mib, goal: 200 * mib, objects: 149 * mib}, false},
		{"just collected", heapState{live: 100 * mib, goal: 200 * mib, objects: 100 * mib}, false},
		{"swept below the live heap", heapState{live: 100 * mib, goal: 200 * mib, objects: 90 * mib}, false},
		{"a heap too small to matter", heapState{live: 10 * mib, goal: 20 * mib, objects: 19 * mib}, false},
		{"a goal at the live heap (memory limit reached)", heapState{live: 100 * mib, goal: 100 * mib, objects: 150 * mib}, false},
	}
	for _, tt := range tests {
		if got := worthCollecting(tt.heap, 64*mib); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestIdleCollectorCollectsOnlyWhenIdle lets the collector's timer fire with a heap
// worth collecting, once with an event in the quiet (no collection), once while an Envoy
// applies what it was sent (busy: no collection) and once with neither
// (a collection, counted, and seen by the runtime as forced: the second time the test
// process's own heap is filled past half its headroom). The counter is the collector's
// own: other tests' managers may collect too.
func TestIdleCollectorCollectsOnlyWhenIdle(t *testing.T) {
	var wakeups atomic.Uint64
	var busy atomic.Bool
	c := newIdleCollector(wakeups.Load, busy.Load)
	c.quiet, c.minLive = 5*time.Millisecond, 0
	c.heap = func() heapState { return heapState{live: 100, goal: 200, objects: 190} }
	c.reconciled()
	wakeups.Add(1) // an event within the quiet
	time.Sleep(100 * time.Millisecond)
	if n := counterValue(t, c.count); n != 0 {
		t.Fatalf("%v collections although an event came within the quiet", n)
	}
	busy.Store(true) // an Envoy has not answered yet
	c.reconciled()
	time.Sleep(100 * time.Millisecond)
	if n := counterValue(t, c.count); n != 0 {
		t.Fatalf("%v collections while an Envoy was applying what it was sent", n)
	}
	busy.Store(false)

	// The runtime may collect by itself between the filling and the timer (another
	// test's manager allocating): fill and wait again then, a few times.
	c.heap = readHeap
	forced := forcedCollections()
	for try := 0; counterValue(t, c.count) == 0; try++ {
		if try == 20 {
			t.Fatal("no collection after a quiet with the heap past half its headroom, 20 times")
		}
		fillHeap(t)
		c.reconciled()
		for deadline := time.Now().Add(500 * time.Millisecond); counterValue(t, c.count) == 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if forcedCollections() == forced {
		t.Fatal("the collector counted a collection the runtime did not see")
	}
}

// heapSink keeps allocations from being optimized away.
var heapSink []byte

// fillHeap allocates garbage until the heap is worth an idle collection.
func fillHeap(t *testing.T) {
	t.Helper()
	for range 100_000 {
		if worthCollecting(readHeap(), 0) {
			return
		}
		heapSink = make([]byte, 64<<10)
	}
	t.Fatal("the heap never reached half of its headroom")
}

func forcedCollections() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
