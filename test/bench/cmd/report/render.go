package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// render writes the report: the machine, a summary against the targets, one table per
// benchmark and the commands that produced them.
func render(c config, m machine, loadAfter string, runs []stepRun) string {
	var b strings.Builder
	by := map[string][]result{}
	for _, r := range runs {
		by[r.key] = append(by[r.key], r.results...)
	}
	fmt.Fprintf(&b, "# Benchmark results\n\nWritten by `make bench` (test/bench/cmd/report) on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s, %d cores, %s memory, Linux %s, %s, Envoy %s.\n\n", m.cpu, m.cores, memoryGiB(m.memory), m.kernel, m.goVersion, m.envoy)
	fmt.Fprintf(&b, "Load average (1, 5, 15 min) before: %s; after: %s. The machine is shared: with a load above %d, wall-clock "+
		"times include waiting for a CPU. The CPU columns count the benchmark process's own CPU time (every goroutine and the "+
		"garbage collector), which contention inflates much less.\n\n", m.load, loadAfter, m.cores)
	renderSummary(&b, by)
	renderTranslation(&b, by["translation"])
	renderChange(&b, by["change"])
	for _, r := range runs {
		if r.key == "change" {
			renderHot(&b, r)
		}
	}
	renderDelta(&b, by["delta"])
	renderRouteChange(&b, by["route-change"])
	renderPropagation(&b, by["propagation"])
	renderDataPlane(&b, c, by["dataplane"])
	renderDNS(&b, by["dns"], by["policy"])
	renderDataPlaneIsolation(&b, c, by["dataplane-isolation"])
	renderTenancyTranslation(&b, by["tenancy-translation"])
	renderChurn(&b, by["churn"])
	renderTunnel(&b, by["tunnel"])
	renderManager(&b, by, runs)
	renderProcess(&b, by["process"])
	renderEnvoyApply(&b, by["envoy-apply"])
	renderProvider(&b, by["provider"])
	b.WriteString("## Commands\n\n```\n")
	for _, r := range runs {
		b.WriteString(r.command + "\n")
	}
	b.WriteString("```\n")
	return b.String()
}

// ms formats nanoseconds as milliseconds.
func ms(ns float64) string { return fmt.Sprintf("%.1f", ns/1e6) }

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// sizeOf reads "gateways=G/backends=N" from a benchmark name.
func sizeOf(name string) (gateways, backends int) {
	for _, part := range strings.Split(name, "/") {
		fmt.Sscanf(part, "gateways=%d", &gateways)
		fmt.Sscanf(part, "backends=%d", &backends)
	}
	return gateways, backends
}

// largestOneGateway returns the result of the largest one-Gateway size.
func largestOneGateway(rs []result) (result, int, bool) {
	var best result
	size := -1
	for _, r := range rs {
		if g, n := sizeOf(r.Name); g == 1 && n > size {
			best, size = r, n
		}
	}
	return best, size, size >= 0
}

func renderSummary(b *strings.Builder, by map[string][]result) {
	b.WriteString("## Summary against the performance targets\n\n| what | target | measured | met |\n| --- | --- | --- | --- |\n")
	if r, n, ok := largestOneGateway(by["translation"]); ok {
		total := r.Values["translate-ns/op"] + r.Values["build-ns/op"]
		fmt.Fprintf(b, "| full translation, %d Backends + HTTPRoutes, one Gateway | < 1 s | %s ms (translate + build) | %s |\n", n, ms(total), met(total < 1e9))
		fmt.Fprintf(b, "| ... its memory | < 512 MiB RSS | %.0f MiB peak RSS | %s |\n", r.Values["peak-rss-MiB"], met(r.Values["peak-rss-MiB"] < 512))
		growth := growthFactor(by["translation"])
		fmt.Fprintf(b, "| ... its growth | linear | %.2f× the per-Backend CPU time of the smallest size | %s |\n", growth, met(growth <= 1.5))
	}
	if r, n, ok := largestOneGateway(by["change"]); ok {
		fmt.Fprintf(b, "| one Backend changed among %d | < 50 ms | %s ms (translate + build + publish) | %s |\n", n, ms(r.Values["ns/op"]), met(r.Values["ns/op"] < 50e6))
	}
	for _, r := range by["propagation"] {
		p50, p99 := r.Values["p50-ms"], r.Values["p99-ms"]
		fmt.Fprintf(b, "| Backend + HTTPRoute to first 200 (%s) | p50 < 300 ms, p99 < 1 s | p50 %.0f ms, p99 %.0f ms | %s |\n", strings.TrimPrefix(r.Name, "BenchmarkPropagation/"), p50, p99, met(p50 < 300 && p99 < 1000))
	}
	for _, r := range by["dataplane"] {
		median := r.Values["rps-ratio-median-round"]
		fmt.Fprintf(b, "| requests/s, generated vs minimal config | ≥ 0.97 | %.3f median of rounds (all rounds %.3f, worst %.3f) | %s |\n",
			median, r.Values["rps-ratio"], r.Values["rps-ratio-worst-round"], met(median >= 0.97))
	}
	for _, r := range by["dns"] {
		if strings.HasPrefix(r.Name, "BenchmarkDNSReresolve/") {
			fmt.Fprintf(b, "| re-resolving %.0f FQDNs | < 2 s | %.2f s | %s |\n", r.Values["names"], r.Values["ns/op"]/1e9, met(r.Values["ns/op"] < 2e9))
		}
	}
	renderTenancySummary(b, by)
	renderTunnelSummary(b, by["tunnel"])
	renderManagerSummary(b, by)
	renderProcessSummary(b, by["process"])
	b.WriteString("\n")
}

// growthFactor compares the per-Backend CPU time of the largest one-Gateway size with
// that of the smallest: 1 is linear, below 1 better than linear. CPU time, not wall
// time: on a shared machine the longer runs wait longer for a CPU.
func growthFactor(rs []result) float64 {
	var small, large float64
	smallN, largeN := 0, 0
	for _, r := range rs {
		g, n := sizeOf(r.Name)
		if g != 1 || n == 0 {
			continue
		}
		per := r.Values["cpu-ns/op"] / float64(n)
		if smallN == 0 || n < smallN {
			small, smallN = per, n
		}
		if n > largeN {
			large, largeN = per, n
		}
	}
	if small == 0 {
		return 0
	}
	return large / small
}

func renderTranslation(b *strings.Builder, rs []result) {
	b.WriteString("## 1. Full translation\n\nBenchmarkFullTranslation: translate.Translate plus envoyconfig.Build of every Gateway, every cache empty (a cold start); " +
		"each Backend is an FQDN destination with mutual TLS (its own CA bundle and client certificate Secrets), each HTTPRoute has its own hostname. " +
		"Peak heap is the largest live heap sampled every 0.5 ms during the runs; peak RSS comes from a child process doing one cold translation " +
		"(in brackets: its RSS with the generated input alone, before translating). Growth is judged on CPU time per Backend.\n\n")
	b.WriteString("| Gateways | Backends + HTTPRoutes | ms/op | translate ms | build ms | CPU ms/op | µs per Backend | allocs/op | MiB allocated/op | peak heap MiB | peak RSS MiB |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		g, n := sizeOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| %d | %d | %s | %s | %s | %s | %.1f | %.0f | %.1f | %.0f | %.0f (%.0f) |\n", g, n, ms(v["ns/op"]), ms(v["translate-ns/op"]), ms(v["build-ns/op"]),
			ms(v["cpu-ns/op"]), (v["translate-ns/op"]+v["build-ns/op"])/1e3/float64(max(n, 1)), v["allocs/op"], v["B/op"]/(1<<20), v["peak-heap-MiB"], v["peak-rss-MiB"], v["input-rss-MiB"])
	}
	b.WriteString("\n")
}

// byBackends is a copy of rs in the order of their Backends, fewest first.
func byBackends(rs []result) []result {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y result) int {
		_, a := sizeOf(x.Name)
		_, c := sizeOf(y.Name)
		return a - c
	})
	return rs
}

func renderChange(b *strings.Builder, rs []result) {
	rs = byBackends(rs)
	b.WriteString("## 2. One Backend changed\n\nBenchmarkOneBackendChanged: one Backend's TLS server name and ALPN change; then translate everything, build every Gateway, " +
		"xds.Server.Publish; the caches are warm as in a running manager and the objects versioned as the API server versions them, " +
		"so a change is a delta of the last translation (deltas: the share of changes that were).\n\n")
	b.WriteString("| Backends | ms/op | translate ms | build ms | publish ms | CPU ms/op | allocs/op | deltas |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		_, n := sizeOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %.0f | %.2f |\n", n, ms(v["ns/op"]), ms(v["translate-ns/op"]), ms(v["build-ns/op"]), ms(v["publish-ns/op"]), ms(v["cpu-ns/op"]), v["allocs/op"], v["deltas/op"])
	}
	b.WriteString("\n")
}

// renderHot lists where a profiled step spent its CPU time.
func renderHot(b *strings.Builder, r stepRun) {
	if len(r.hot) == 0 {
		return
	}
	fmt.Fprintf(b, "Where the CPU time of the changes at the largest size goes (a CPU profile of the timed loop only; cumulative share of all "+
		"samples, this module's functions only; the rest is mostly the garbage collector):\n\n| function | share |\n| --- | ---: |\n")
	for _, h := range r.hot {
		fmt.Fprintf(b, "| %s | %.1f%% |\n", h.name, h.percent)
	}
	b.WriteString("\n")
}

func renderPropagation(b *strings.Builder, rs []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 3. Propagation through the real Envoy\n\nBenchmarkPropagation: the manager in-process (controllers.NewReconciler, the xDS server, the DNS guard on a " +
		"scripted DNS server) against kube-apiserver and etcd, one Envoy; each try creates a Backend (HTTPS to a local upstream) and an HTTPRoute " +
		"for a new hostname and polls Envoy every 2 ms until the first 200.\n\n")
	b.WriteString("| routes present | tries | p50 ms | p95 ms | p99 ms |\n| ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		var present int
		fmt.Sscanf(strings.TrimPrefix(r.Name, "BenchmarkPropagation/"), "present=%d", &present)
		fmt.Fprintf(b, "| %d | %.0f | %.0f | %.0f | %.0f |\n", present, r.Values["tries"], r.Values["p50-ms"], r.Values["p95-ms"], r.Values["p99-ms"])
	}
	b.WriteString("\n")
}

func renderDataPlane(b *strings.Builder, c config, rs []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 4. Data-plane overhead\n\nBenchmarkDataPlane: the same Envoy binary (one worker thread each), the same local HTTPS upstream and the " +
		"same Go load generator (fixed concurrency, keep-alive) through Portcullis' generated configuration (over xDS) and through a minimal " +
		"hand-written static bootstrap doing the same TLS origination (testdata/minimal-envoy.yaml.tmpl). The generated side is the default " +
		"configuration (tenant isolation on, the audit log on) of a Gateway shared by the load generator's namespace and 100 other tenants " +
		"(one mTLS Backend and HTTPRoute each, 1,000 other caller pods); the load generator is the pod on 127.0.0.1; the sides alternate, the one that goes " +
		"first swapping every round. Ratios are generated / minimal; the target is judged on the median of the per-round ratios, which a burst " +
		"of other work on the shared machine during one round does not move.\n\n")
	b.WriteString("| concurrency | rounds | requests/s generated | requests/s minimal | ratio, all rounds | median round | worst round | p99 ms generated | p99 ms minimal | p99 ratio |\n")
	b.WriteString("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		v := r.Values
		fmt.Fprintf(b, "| %d | %d × %s per side | %.0f | %.0f | %.3f | %.3f | %.3f | %.2f | %.2f | %.3f |\n", c.conc, c.rounds, c.round, v["rps-generated"], v["rps-minimal"],
			v["rps-ratio"], v["rps-ratio-median-round"], v["rps-ratio-worst-round"], v["p99-ms-generated"], v["p99-ms-minimal"], v["p99-ratio"])
	}
	b.WriteString("\n")
}

func renderDNS(b *strings.Builder, dns, policy []result) {
	b.WriteString("## 5. DNS guard\n\nBenchmarkDNSReresolve: every name through dnsguard.Resolver (A and AAAA, answers vetted) on the Store's default " +
		"16 workers against a local miekg/dns server (dnstest); BenchmarkDNSStoreResolve: the same names tracked by a Store, until all are " +
		"resolved. BenchmarkAddressPolicyCheck: one address against the default policy.\n\n")
	b.WriteString("| benchmark | names | s/op | CPU s/op |\n| --- | ---: | ---: | ---: |\n")
	for _, r := range dns {
		var names int
		_, sub, _ := strings.Cut(r.Name, "/")
		fmt.Sscanf(sub, "names=%d", &names)
		fmt.Fprintf(b, "| %s | %d | %.2f | %s |\n", strings.TrimPrefix(strings.Split(r.Name, "/")[0], "Benchmark"), names, r.Values["ns/op"]/1e9, cpuSeconds(r.Values))
	}
	for _, r := range policy {
		fmt.Fprintf(b, "\nAddress policy check: %.0f ns/op, %.0f allocs/op.\n", r.Values["ns/op"], r.Values["allocs/op"])
	}
	b.WriteString("\n")
}

func cpuSeconds(v map[string]float64) string {
	if c, ok := v["cpu-ns/op"]; ok {
		return fmt.Sprintf("%.2f", c/1e9)
	}
	return "-"
}

// memoryGiB turns /proc/meminfo's "24684084 kB" into "23.5 GiB".
func memoryGiB(memTotal string) string {
	var kb float64
	if _, err := fmt.Sscanf(memTotal, "%f kB", &kb); err != nil {
		return memTotal
	}
	return fmt.Sprintf("%.1f GiB", kb/(1<<20))
}
