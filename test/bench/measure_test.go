package bench

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"
)

// heapSampler records the largest live heap seen while it runs. runtime/metrics reads
// are cheap enough to take every half millisecond without stopping the world; a peak
// shorter than that can be missed, so the figure is a lower bound of the true peak.
type heapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

const heapMetric = "/memory/classes/heap/objects:bytes"

func startHeapSampler() *heapSampler {
	s := &heapSampler{stop: make(chan struct{})}
	sample := []metrics.Sample{{Name: heapMetric}}
	read := func() {
		metrics.Read(sample)
		s.peak = max(s.peak, sample[0].Value.Uint64())
	}
	read()
	s.done.Go(func() {
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				read()
				return
			case <-tick.C:
				read()
			}
		}
	})
	return s
}

// peakMiB stops the sampler and returns the peak in MiB.
func (s *heapSampler) peakMiB() float64 {
	close(s.stop)
	s.done.Wait()
	return float64(s.peak) / (1 << 20)
}

// cpuTime is the CPU time (user and system) the process used so far, every goroutine
// and the garbage collector included. On a machine shared with other work it says more
// about the cost of an operation than the wall time does.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// maxRSS is the largest resident set of the process so far.
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10 // kilobytes on Linux
}

// opMeter reports per-operation CPU time alongside the benchmark's wall time.
type opMeter struct {
	tb    testing.TB
	start time.Duration
}

func startCPU(tb testing.TB) opMeter {
	runtime.GC()
	return opMeter{tb: tb, start: cpuTime(tb)}
}

// report adds cpu-ns/op for n operations.
func (m opMeter) report(b *testing.B, n int) {
	b.ReportMetric(float64((cpuTime(m.tb)-m.start).Nanoseconds())/float64(n), "cpu-ns/op")
}
