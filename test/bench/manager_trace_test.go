package bench

import (
	"context"
	"fmt"
	"os"
	"runtime/trace"
	"slices"
	"testing"
)

// envManagerTrace names a file to write a runtime execution trace of the timed changes of
// the largest size to, each change marked by a "change" log ("I start", "I end MICROS"):
// what ran in the manager's process during the slow changes (cmd/gcoverlap reads it).
// envPropagationTrace does the same for BenchmarkPropagation's tries.
const (
	envManagerTrace     = "BENCH_MANAGER_TRACE"
	envPropagationTrace = "BENCH_PROPAGATION_TRACE"
)

// startManagerTrace traces the timed changes when envManagerTrace is set and n is the
// largest size; the function it returns stops the trace.
func startManagerTrace(b *testing.B, n int) (stop func()) {
	if n != slices.Max(sizeList(b, envManagerSizes, defaultManagerSizes)) {
		return func() {}
	}
	return startTrace(b, os.Getenv(envManagerTrace))
}

// startTrace writes a runtime trace to path until the function it returns is called;
// nothing when path is empty.
func startTrace(b *testing.B, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		trace.Stop()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// markChange notes a step of change i in the trace, when one is being taken.
func markChange(i int, what string) {
	trace.Log(context.Background(), "change", fmt.Sprintf("%d %s", i, what))
}
