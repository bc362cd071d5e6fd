package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The benchmarks of the real manager (issue 16): a change through the reconciler, a
// burst of creations until Programmed, and the manager's memory as a process.

// Targets of the manager benchmarks, as issue 16 states them.
const (
	managerChangeSize      = 10000 // the size the change targets are stated for
	managerChangeP50Ms     = 50
	managerChangeP99Ms     = 100
	managerCreateSettleMs  = 5000
	managerRSSMiB          = 512
	managerPodsAddedMiB    = 64
	managerGrowthTolerance = 1.5 // per-Backend p50 at the largest size over the smallest
)

// managerConfig are the sizes of the manager benchmarks.
type managerConfig struct {
	sizes   string
	changes int
	create  int
	memory  string
	skip    bool
}

func registerManagerFlags(c *managerConfig) {
	flag.StringVar(&c.sizes, "manager-sizes", "1000,10000,30000", "Backend and HTTPRoute counts of the change through the real manager")
	flag.IntVar(&c.changes, "manager-changes", 30, "changes per size through the real manager")
	flag.IntVar(&c.create, "manager-create", 1000, "Backends and HTTPRoutes created at once until Programmed")
	flag.StringVar(&c.memory, "manager-memory", "10000/500/10000", "the manager memory workload, <backends>/<namespaces>/<pods> (two Secrets per Backend)")
	flag.BoolVar(&c.skip, "skip-manager", false, "leave out the benchmarks of the real manager (need kube-apiserver and etcd; the creation one Envoy)")
}

// managerSteps are the runs of the manager benchmarks; the creation one needs Envoy and
// goes with the propagation benchmark.
func managerSteps(c config) []step {
	m := c.manager
	if m.skip {
		return nil
	}
	// One process per size: the sizes share nothing then, not even the API server (in one
	// process, the objects of the smaller sizes stayed and the larger size's manager
	// translated them too). The target size is profiled.
	var out []step
	for _, size := range strings.Split(m.sizes, ",") {
		st := step{key: "manager-change", bench: "^BenchmarkManagerOneBackendChanged$", benchtime: fmt.Sprintf("%dx", m.changes),
			env: []string{"BENCH_MANAGER_SIZES=" + size}}
		if size == strconv.Itoa(managerChangeSize) {
			st.profileEnv = "BENCH_MANAGER_PROFILE"
		}
		out = append(out, st)
	}
	if !c.skipPropagation {
		out = append(out, step{key: "manager-create", bench: "^BenchmarkManagerCreateProgrammed$", benchtime: "1x",
			env: []string{fmt.Sprintf("BENCH_MANAGER_CREATE=%d", m.create)}})
	}
	return append(out, step{key: "manager-memory", bench: "^BenchmarkManagerMemory$", benchtime: "1x",
		env: []string{"BENCH_MANAGER_MEMORY=" + m.memory}},
		step{key: "manager-memory-applied", bench: "^BenchmarkManagerMemory$", benchtime: "1x",
			env: []string{"BENCH_MANAGER_MEMORY=" + withOnePod(m.memory), "BENCH_MANAGER_MEMORY_APPLIED=1"}})
}

// withOnePod is a memory workload with one pod instead of its pods: the run with objects
// as `kubectl apply` leaves them measures the Backends, routes and Secrets (pods are
// made by controllers, not applied), and the first run measures the pods already.
func withOnePod(workload string) string {
	if i := strings.LastIndex(workload, "/"); i >= 0 {
		return workload[:i] + "/1"
	}
	return workload
}

// backendsOf reads "backends=N" from a benchmark name.
func backendsOf(name string) int {
	_, n := sizeOf(name)
	return n
}

// bySize sorts results by their Backend count.
func bySize(rs []result) []result {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y result) int { return backendsOf(x.Name) - backendsOf(y.Name) })
	return rs
}

func renderManagerSummary(b *strings.Builder, by map[string][]result) {
	changes := bySize(by["manager-change"])
	if r, ok := targetSize(changes); ok {
		p50, p99 := r.Values["p50-ms"], r.Values["p99-ms"]
		fmt.Fprintf(b, "| one Backend changed among %d, through the real reconciler (event → snapshot published) | p50 < %d ms, p99 < %d ms | p50 %.1f ms, p99 %.1f ms | %s |\n",
			backendsOf(r.Name), managerChangeP50Ms, managerChangeP99Ms, p50, p99, met(p50 < managerChangeP50Ms && p99 < managerChangeP99Ms))
	}
	if len(changes) > 1 {
		growth := latencyGrowth(changes)
		fmt.Fprintf(b, "| ... its growth | linear | %.2f× the per-Backend p50 of %d Backends at %d | %s |\n",
			growth, backendsOf(changes[0].Name), backendsOf(changes[len(changes)-1].Name), met(growth <= managerGrowthTolerance))
	}
	for _, r := range by["manager-create"] {
		settle := r.Values["settle-ms"]
		fmt.Fprintf(b, "| %d Backends + HTTPRoutes created at once → all Programmed | < %d s after the last create | %.2f s | %s |\n",
			backendsOf(r.Name), managerCreateSettleMs/1000, settle/1000, met(settle < managerCreateSettleMs))
	}
	for _, r := range by["manager-memory"] {
		backends, _, pods := tenancyOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| manager RSS with %d Backends + routes + %d Secrets | < %d MiB | %.0f MiB RSS (live heap %.0f MiB) | %s |\n",
			backends, 2*backends, managerRSSMiB, v["rss-MiB"], v["heap-MiB"], met(v["rss-MiB"] < managerRSSMiB))
		fmt.Fprintf(b, "| %d pods watched | < %d MiB added | %+.0f MiB RSS (live heap %+.0f MiB) | %s |\n",
			pods, managerPodsAddedMiB, v["pods-added-rss-MiB"], v["pods-added-heap-MiB"], met(v["pods-added-rss-MiB"] < managerPodsAddedMiB))
	}
	for _, r := range by["manager-memory-applied"] {
		v := r.Values
		fmt.Fprintf(b, "| ... the same created as `kubectl apply` leaves them | < %d MiB | %.0f MiB RSS (live heap %.0f MiB, peak anonymous %.0f MiB) | %s |\n",
			managerRSSMiB, v["rss-MiB"], v["heap-MiB"], v["anon-peak-MiB"], met(v["rss-MiB"] < managerRSSMiB && v["anon-peak-MiB"] < managerRSSMiB))
	}
}

// targetSize is the result of the size the change targets are stated for, or of the
// largest size when that one did not run.
func targetSize(sorted []result) (result, bool) {
	if len(sorted) == 0 {
		return result{}, false
	}
	if i := slices.IndexFunc(sorted, func(r result) bool { return backendsOf(r.Name) == managerChangeSize }); i >= 0 {
		return sorted[i], true
	}
	return sorted[len(sorted)-1], true
}

// latencyGrowth compares the p50 per Backend of the largest size with that of the
// smallest (sorted results): 1 is linear, below 1 better than linear.
func latencyGrowth(rs []result) float64 {
	small, large := rs[0], rs[len(rs)-1]
	per := func(r result) float64 { return r.Values["p50-ms"] / float64(max(backendsOf(r.Name), 1)) }
	if per(small) == 0 {
		return 0
	}
	return per(large) / per(small)
}

// renderManager writes the sections of the manager benchmarks.
func renderManager(b *strings.Builder, by map[string][]result, runs []stepRun) {
	renderManagerChange(b, by["manager-change"])
	for _, r := range runs {
		if r.key == "manager-change" {
			renderHot(b, r)
		}
	}
	renderManagerCreate(b, by["manager-create"])
	renderManagerMemory(b, by["manager-memory"], by["manager-memory-applied"])
}

func renderManagerChange(b *strings.Builder, rs []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 10. One Backend changed, through the real manager\n\nBenchmarkManagerOneBackendChanged: the manager in-process " +
		"(controllers.NewReconciler, the xDS server, the DNS guard on a scripted DNS server answering every name with a public address), no Envoy; " +
		"N FQDN Backends (HTTPS, System CA, a server name each) and one HTTPRoute each, created through kube-apiserver on 16 connections. " +
		"Each try updates one Backend's server name and ALPN and times from the Update call until the xDS server's version of the Gateway's clusters " +
		"changes (polled every 0.5 ms): watch event, gather, translation, build and publish. The next try waits until the reconciler has been idle for 50 ms. " +
		"The first try is also given apart, with the slowest of the others: it meets what the bulk load left (the kinds listed in full once). " +
		"Setup: creating the objects, then until the snapshot holds them all and the statuses are written.\n\n")
	b.WriteString("| Backends | tries | p50 ms | p95 ms | p99 ms | max ms | first ms | max of the rest ms | create s | settle s |\n" +
		"| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range bySize(rs) {
		v := r.Values
		fmt.Fprintf(b, "| %d | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f |\n", backendsOf(r.Name), v["tries"], v["p50-ms"], v["p95-ms"], v["p99-ms"],
			v["max-ms"], v["first-ms"], v["rest-max-ms"], v["create-s"], v["settle-s"])
	}
	b.WriteString("\n")
}

func renderManagerCreate(b *strings.Builder, rs []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 11. Created at once until Programmed\n\nBenchmarkManagerCreateProgrammed: section 3's world (the manager in-process, one Envoy, " +
		"an HTTPS upstream); N Backends and their HTTPRoutes created on 16 connections; timed from the last create returning until every Backend " +
		"is Programmed (Envoy acknowledged a configuration carrying it) and every HTTPRoute Accepted, watched as `kubectl wait` watches (up to 2026-11-24 it listed both kinds every 20 ms; at 1,000 objects those lists took much of the CPU the manager, Envoy and the API server share, and settling took 1–1.5 s longer).\n\n")
	b.WriteString("| Backends + HTTPRoutes | creating them, s | last create → all Programmed, s |\n| ---: | ---: | ---: |\n")
	for _, r := range rs {
		fmt.Fprintf(b, "| %d | %.2f | %.2f |\n", backendsOf(r.Name), r.Values["create-ms"]/1000, r.Values["settle-ms"]/1000)
	}
	b.WriteString("\n")
}

func renderManagerMemory(b *strings.Builder, rs, applied []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 12. Manager memory\n\nBenchmarkManagerMemory: `portcullis manager` (kubernetes provider, no Envoy) as a process of its own against " +
		"kube-apiserver, told the Deployment's memory limit (512 MiB, PORTCULLIS_MEMORY_LIMIT as the downward API sets it: the Go runtime aims under it less max(10%, 96 MiB)); mTLS Backends, each referencing a client certificate Secret and a CA bundle Secret of its own, and their HTTPRoutes, " +
		"spread over tenant namespaces; then running pods (status set through the status subresource). Read once the manager has used less " +
		"than 3% of a CPU over 3 s, a garbage collection ran since (annotating a Namespace makes it reconcile until one does) and it is quiet again: " +
		"VmRSS, VmHWM (peak), and the live heap that collection left (GODEBUG=gctrace=1). The peak anonymous memory is RssAnon sampled every 50 ms " +
		"during the step: VmHWM also counts the binary's pages mapped from its file (about 57 MiB), which the kernel can drop and read again, where " +
		"anonymous memory over a cgroup's limit can only be got back by killing the process.\n\n")
	b.WriteString("| state | RSS MiB | peak RSS MiB | peak anonymous MiB | live heap MiB | loading s | settling s |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		backends, namespaces, pods := tenancyOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| started, nothing to do | %.0f | | | %.0f | | |\n", v["idle-rss-MiB"], v["idle-heap-MiB"])
		fmt.Fprintf(b, "| %d Backends + HTTPRoutes, %d Secrets, %d namespaces | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", backends, 2*backends, namespaces,
			v["rss-MiB"], v["hwm-MiB"], v["anon-peak-MiB"], v["heap-MiB"], v["create-s"], v["settle-s"])
		fmt.Fprintf(b, "| ... and %d running pods | %.0f | %.0f | %.0f | %.0f | %.0f | |\n", pods, v["pods-rss-MiB"], v["pods-hwm-MiB"], v["pods-anon-peak-MiB"],
			v["pods-heap-MiB"], v["pods-create-s"])
	}
	for _, r := range applied {
		backends, namespaces, _ := tenancyOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| %d Backends + HTTPRoutes, %d Secrets, %d namespaces, created as `kubectl apply` leaves them (its last-applied annotation holding the manifest; a process of its own) | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n",
			backends, 2*backends, namespaces, v["rss-MiB"], v["hwm-MiB"], v["anon-peak-MiB"], v["heap-MiB"], v["create-s"], v["settle-s"])
	}
	b.WriteString("\n")
}
