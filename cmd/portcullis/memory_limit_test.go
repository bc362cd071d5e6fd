package main

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// TestMemoryLimitFollowsTheContainers: the container's limit sets the Go memory limit
// to the limit less the larger of 10% and 96 MiB; GOMEMLIMIT, when set, wins; without
// either nothing changes; a value that is not a byte count, or too small to leave a
// heap, is refused by name.
func TestMemoryLimitFollowsTheContainers(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	tests := []struct {
		name, limit, gomemlimit string
		want                    int64 // the Go memory limit afterwards
		err                     string
	}{
		{"the container's 512 MiB: 96 MiB reserved", "536870912", "", 416 << 20, ""},
		{"2 GiB: 10% reserved", "2147483648", "", 1932735284, ""},
		{"96 MiB leaves no heap", "100663296", "", math.MaxInt64, "PORTCULLIS_MEMORY_LIMIT=100663296: a memory limit below 96 MiB"},
		{"GOMEMLIMIT set by the operator wins", "536870912", "300MiB", math.MaxInt64, ""},
		{"no limit", "", "", math.MaxInt64, ""},
		{"not a byte count", "512Mi", "", math.MaxInt64, "PORTCULLIS_MEMORY_LIMIT=\"512Mi\": want the container's memory limit in bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			t.Setenv(memoryLimitEnv, tc.limit)
			t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			err := applyMemoryLimit(logr.Discard())
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("Go memory limit %d, want %d", got, tc.want)
			}
		})
	}
}
