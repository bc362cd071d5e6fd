package controllers

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// idleCollector starts a garbage collection when the manager falls idle with at least
// half of the heap's headroom (from the live heap to the runtime's goal) allocated: the
// collection the runtime would start anyway, a change or two later, then runs while
// nothing waits for the manager, instead of during the next change.
//
// Why: at 10,000 Backends the live heap is some 250 MB and a mark phase lasts 85-280 ms
// (median ~115 ms in runtime traces of the one-change benchmark); a change that meets
// one takes 80-220 ms instead of ~40 ms (every try over 60 ms overlapped one), because
// the mark worker takes half of one of the two CPUs, write barriers slow the reconciler
// and the API server wants the same cores. Changes mostly come in bursts with quiet
// between them, and a collection started in the quiet delays none of them (in two traced
// runs with it, no change overlapped a mark phase). Under steady churn the manager is
// never idle and nothing changes: the runtime collects as it would have. At most it
// doubles how often the heap is collected; the manager's resident set at 10,000 Backends
// and 20,000 Secrets was no higher with it (BenchmarkManagerMemory: 445 MiB).
//
// Idle means idle for the machine too: while an Envoy has not answered what the xDS
// server sent it (busy), it is applying it, and on two CPUs a collection then takes the
// CPU that Envoy's apply needs (one route changed in a 10,000-host table: p50 137 ms
// from publish to Envoy's ACK, BenchmarkEnvoyAppliesOneRouteChange). Envoy's answer
// wakes the reconciler, whose end arms the collector again.
type idleCollector struct {
	// quiet is how long no event may wake the reconciler before the manager counts as
	// idle; minLive is the live heap below which collections are too short to matter.
	quiet   time.Duration
	minLive uint64
	wakeups func() uint64
	busy    func() bool      // nil: never busy
	heap    func() heapState // readHeap; tests choose
	count   prometheus.Counter

	mu      sync.Mutex
	timer   *time.Timer
	running atomic.Bool
}

// Defaults of the idle collector: a quiet of 10 ms (a reconcile's own follow-ups, the
// xDS server's notice and Envoy's acknowledgement, come within it or start a reconcile
// beside the collection, as any event could) and collections only above 64 MiB of live
// heap (a few thousand objects).
const (
	idleQuiet   = 10 * time.Millisecond
	idleMinLive = 64 << 20
)

func newIdleCollector(wakeups func() uint64, busy func() bool) *idleCollector {
	return &idleCollector{
		quiet: idleQuiet, minLive: idleMinLive, wakeups: wakeups, busy: busy, heap: readHeap,
		count: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricIdleCollections,
			Help: "Garbage collections the manager started while idle, with at least half of the heap's headroom allocated, so that the collection does not run during the next change.",
		}),
	}
}

// reconciled notes that a reconcile ended: if no event wakes the reconciler within the
// quiet, the heap is looked at.
func (c *idleCollector) reconciled() {
	if c == nil {
		return
	}
	at := c.wakeups()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.timer = time.AfterFunc(c.quiet, func() { c.collectIfIdle(at) })
}

// collectIfIdle collects when nothing woke the reconciler since the reconcile that
// armed it and the heap is worth collecting. runtime.GC returns when the collection is
// done; the reconciler runs meanwhile if an event comes.
func (c *idleCollector) collectIfIdle(at uint64) {
	if c.wakeups() != at || (c.busy != nil && c.busy()) || !worthCollecting(c.heap(), c.minLive) || !c.running.CompareAndSwap(false, true) {
		return
	}
	defer c.running.Store(false)
	runtime.GC()
	c.count.Inc()
}

// heapState is what the runtime says of the heap: live as of the last collection, the
// goal the next one starts against, and what objects occupy now (live and garbage).
type heapState struct {
	live, goal, objects uint64
}

func readHeap() heapState {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return heapState{live: s[0].Value.Uint64(), goal: s[1].Value.Uint64(), objects: s[2].Value.Uint64()}
}

// worthCollecting tells whether at least half of the headroom between the live heap
// and the goal has been allocated, on a live heap of at least minLive.
func worthCollecting(h heapState, minLive uint64) bool {
	if h.live < minLive || h.goal <= h.live || h.objects <= h.live {
		return false
	}
	return h.objects-h.live >= (h.goal-h.live)/2
}
