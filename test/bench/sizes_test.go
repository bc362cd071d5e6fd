package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Environment variables that size the benchmarks. The defaults are small so that
// `make test` runs every benchmark once in seconds; `make bench` sets the big sizes.
const (
	// envSizes lists the Backend (and HTTPRoute) counts on one Gateway: "100,1000,10000".
	envSizes = "BENCH_SIZES"
	// envMulti is the many-Gateway case, "<gateways>x<backends per gateway>".
	envMulti = "BENCH_MULTI"
	// envTenancy lists the tenancy cases, "<backends>/<namespaces>/<pods>,...": Backends
	// and HTTPRoutes of one Gateway and running pods, spread over the namespaces.
	envTenancy = "BENCH_TENANCY"
)

var (
	defaultSizes   = []int{100}
	defaultMulti   = workload{gateways: 10, perGateway: 10}
	defaultTenancy = workload{gateways: 1, perGateway: 100, namespaces: 10, pods: 100}
)

// sizes returns the one-Gateway sizes to run.
func sizes(tb testing.TB) []int {
	tb.Helper()
	return sizeList(tb, envSizes, defaultSizes)
}

// sizeList reads a comma-separated list of sizes, or def when unset.
func sizeList(tb testing.TB, name string, def []int) []int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := positive(f)
		if err != nil {
			tb.Fatalf("%s=%q: %v", name, v, err)
		}
		out = append(out, n)
	}
	return out
}

// multi returns the many-Gateway workload to run.
func multi(tb testing.TB) workload {
	tb.Helper()
	v := os.Getenv(envMulti)
	if v == "" {
		return defaultMulti
	}
	gs, per, ok := strings.Cut(v, "x")
	g, err1 := positive(gs)
	p, err2 := positive(per)
	if !ok || err1 != nil || err2 != nil {
		tb.Fatalf("%s=%q: want <gateways>x<backends per gateway>, e.g. 10x1000", envMulti, v)
	}
	return workload{gateways: g, perGateway: p}
}

// tenancy returns the tenancy workloads to run.
func tenancy(tb testing.TB) []workload {
	tb.Helper()
	v := os.Getenv(envTenancy)
	if v == "" {
		return []workload{defaultTenancy}
	}
	var out []workload
	for _, spec := range strings.Split(v, ",") {
		w, err := parseTenancy(spec)
		if err != nil {
			tb.Fatalf("%s=%q: %v", envTenancy, v, err)
		}
		out = append(out, w)
	}
	return out
}

// parseTenancy reads one "<backends>/<namespaces>/<pods>" workload of one Gateway.
func parseTenancy(spec string) (workload, error) {
	f := strings.Split(spec, "/")
	if len(f) != 3 {
		return workload{}, fmt.Errorf("%q: want <backends>/<namespaces>/<pods>, e.g. 10000/500/10000", spec)
	}
	w := workload{gateways: 1}
	for i, dst := range []*int{&w.perGateway, &w.namespaces, &w.pods} {
		n, err := positive(f[i])
		if err != nil {
			return workload{}, err
		}
		*dst = n
	}
	return w, nil
}

// envInt reads a positive integer setting, or def when unset.
func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := positive(v)
	if err != nil {
		tb.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func positive(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive integer", s)
	}
	return n, nil
}

// envDuration reads a Go duration (time.ParseDuration) from the environment variable
// name, def when it is unset.
func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		tb.Fatalf("%s=%q: want a positive Go duration such as 300ms", name, v)
	}
	return d
}
