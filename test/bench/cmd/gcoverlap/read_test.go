package main

import (
	"bytes"
	"context"
	"runtime"
	rtrace "runtime/trace"
	"strings"
	"testing"
	"time"
)

// TestReadFindsTheChangeThatMetACollection traces two changes logged as the benchmark
// logs them, a collection forced inside the first, and expects the overlap there and
// none in the second.
func TestReadFindsTheChangeThatMetACollection(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rtrace.Log(ctx, "change", "0 start")
	runtime.GC()
	rtrace.Log(ctx, "change", "0 end 2000")
	rtrace.Log(ctx, "change", "1 start")
	time.Sleep(time.Millisecond)
	rtrace.Log(ctx, "change", "1 end 1000")
	rtrace.Stop()

	changes, err := read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 {
		t.Fatalf("read %d changes, want 2", len(changes))
	}
	if c := changes[0]; c.index != 0 || c.took != 2*time.Millisecond || c.marking <= 0 {
		t.Errorf("change 0: %+v; want took 2ms and a mark phase in it", c)
	}
	if c := changes[1]; c.index != 1 || c.marking != 0 {
		t.Errorf("change 1: %+v; want no mark phase in it", c)
	}
	var out strings.Builder
	writeReport(&out, changes)
	if !strings.Contains(out.String(), "1 of 2 changes overlapped a mark phase") {
		t.Errorf("summary:\n%s", out.String())
	}
}

// TestReadRefusesAnEndWithoutItsStart: a log the benchmark would not write is an error,
// not a change silently dropped.
func TestReadRefusesAnEndWithoutItsStart(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	rtrace.Log(context.Background(), "change", "3 end 1000")
	rtrace.Stop()
	if _, err := read(&buf); err == nil || !strings.Contains(err.Error(), "does not close") {
		t.Fatalf("read: %v; want an error about the unmatched end", err)
	}
}
