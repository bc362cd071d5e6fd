package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/go-logr/logr"
)

// memoryLimitEnv holds the container's memory limit in bytes; the Deployment fills it
// from the downward API (resourceFieldRef limits.memory).
const memoryLimitEnv = "PORTCULLIS_MEMORY_LIMIT"

// The Go memory limit is the container's limit less a reserve for the resident memory
// the Go runtime does not count: the binary's pages and what the kernel charges the
// container besides. That is about 55 MiB for the manager (its resident set with an
// empty heap), so the reserve is the larger of 10% of the limit and 96 MiB. A reserve
// of 10% alone (51 MiB of 512 MiB) left no margin: the resident set rode at the limit
// (490-513 MiB at 10,000 Backends, 20,000 Secrets and 10,000 pods, whatever the live heap).
const (
	memoryReserveShare = 0.1
	memoryReserveMin   = 96 << 20
)

// applyMemoryLimit tells the Go runtime the container's memory limit, unless GOMEMLIMIT
// already did. Without it the garbage collector lets the heap reach twice the live
// data before collecting: at 10,000 Backends and 20,000 Secrets the manager's resident
// set was 2.4 times its live heap, and over the Deployment's 512 MiB limit, where the
// kernel kills it. With it the collector works harder as the limit nears instead.
func applyMemoryLimit(log logr.Logger) error {
	raw := os.Getenv(memoryLimitEnv)
	if raw == "" || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	limit, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || limit <= 0 {
		return fmt.Errorf("%s=%q: want the container's memory limit in bytes (resourceFieldRef limits.memory)", memoryLimitEnv, raw)
	}
	soft := limit - max(int64(float64(limit)*memoryReserveShare), memoryReserveMin)
	if soft <= 0 {
		return fmt.Errorf("%s=%d: a memory limit below %d MiB leaves the manager no heap", memoryLimitEnv, limit, memoryReserveMin>>20)
	}
	debug.SetMemoryLimit(soft)
	log.Info("Go memory limit set from the container's", "limitBytes", limit, "goMemoryLimitBytes", soft)
	return nil
}
