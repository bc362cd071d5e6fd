package main

import (
	"fmt"
	"strings"
)

// Tenancy (the README's "Tenancy"): what isolation costs on the data path, what pods add
// to a full translation, and how fast pod churn reaches Envoy. The targets of isolation
// are the ones its benchmarks were asked to meet.
const (
	isolationRatioTarget = 0.95
	churnSettleTargetMs  = 1000
)

// tenancyOf reads "backends=B/namespaces=N/pods=P" from a benchmark name.
func tenancyOf(name string) (backends, namespaces, pods int) {
	for _, part := range strings.Split(name, "/") {
		fmt.Sscanf(part, "backends=%d", &backends)
		fmt.Sscanf(part, "namespaces=%d", &namespaces)
		fmt.Sscanf(part, "pods=%d", &pods)
	}
	return backends, namespaces, pods
}

// connectionsOf reads "connections=C" from a benchmark name.
func connectionsOf(name string) string {
	for _, part := range strings.Split(name, "/") {
		if v, ok := strings.CutPrefix(part, "connections="); ok {
			return v
		}
	}
	return "?"
}

func renderTenancySummary(b *strings.Builder, by map[string][]result) {
	for _, r := range by["dataplane-isolation"] {
		median := r.Values["rps-ratio-median-round"]
		fmt.Fprintf(b, "| requests/s, tenant isolation on vs off (%s connections) | ≥ %.2f | %.3f median of rounds (all rounds %.3f, worst %.3f) | %s |\n",
			connectionsOf(r.Name), isolationRatioTarget, median, r.Values["rps-ratio"], r.Values["rps-ratio-worst-round"], met(median >= isolationRatioTarget))
	}
	if with, without, ok := tenancyPair(by["tenancy-translation"]); ok {
		n, ns, pods := tenancyOf(with.Name)
		w, wo := with.Values, without.Values
		total := w["translate-ns/op"] + w["build-ns/op"]
		fmt.Fprintf(b, "| full translation, %d Backends + HTTPRoutes over %d namespaces, %d pods | < 1 s | %s ms (the pods: %+.0f ms CPU, %+.0f MiB peak heap) | %s |\n",
			n, ns, pods, ms(total), (w["cpu-ns/op"]-wo["cpu-ns/op"])/1e6, w["peak-heap-MiB"]-wo["peak-heap-MiB"], met(total < 1e9))
	}
	for _, r := range by["churn"] {
		n, _, pods := tenancyOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| pod churn, %.0f events/s among %d pods, %d Backends: event to Envoy ACK | settles < 1 s | p50 %.0f ms, p99 %.0f ms, max %.0f ms | %s |\n",
			v["events/s"], pods, n, v["ack-p50-ms"], v["ack-p99-ms"], v["ack-max-ms"], met(v["ack-p99-ms"] < churnSettleTargetMs))
	}
}

// tenancyPair finds the largest tenancy translation with pods and the same one without.
func tenancyPair(rs []result) (with, without result, ok bool) {
	best := -1
	for _, r := range rs {
		if n, _, pods := tenancyOf(r.Name); pods > 0 && n > best {
			with, best = r, n
		}
	}
	if best < 0 {
		return result{}, result{}, false
	}
	wantN, wantNS, _ := tenancyOf(with.Name)
	for _, r := range rs {
		if n, ns, pods := tenancyOf(r.Name); pods == 0 && n == wantN && ns == wantNS {
			return with, r, true
		}
	}
	return result{}, result{}, false
}

func renderDataPlaneIsolation(b *strings.Builder, c config, rs []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 6. Tenant isolation on the data path\n\nBenchmarkDataPlaneIsolation: the Gateway of section 4 (the load generator's namespace " +
		"and 100 other tenants, one mTLS Backend and HTTPRoute each, 1,000 other caller pods; the load generator is the pod on 127.0.0.1), " +
		"with the same Envoy binary (one worker thread each), upstream and load generator, once with tenant isolation on (Envoy picks a filter " +
		"chain by source address among the callers, then serves the caller namespace's route table) and once off (`portcullis.io/tenant-isolation: off`: " +
		"one chain, the shared table); the sides alternate as in section 4. Envoy picks the filter chain once per connection, so the comparison runs " +
		"on keep-alive connections and again with a new connection per request. Ratios are isolated / shared; the target is judged on the median round.\n\n")
	b.WriteString("| connections | concurrency | rounds | requests/s isolated | requests/s shared | ratio, all rounds | median round | worst round | p99 ms isolated | p99 ms shared | p99 ratio |\n")
	b.WriteString("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		v := r.Values
		fmt.Fprintf(b, "| %s | %d | %d × %s per side | %.0f | %.0f | %.3f | %.3f | %.3f | %.2f | %.2f | %.3f |\n", connectionsOf(r.Name), c.conc, c.rounds, c.round,
			v["rps-isolated"], v["rps-shared"], v["rps-ratio"], v["rps-ratio-median-round"], v["rps-ratio-worst-round"], v["p99-ms-isolated"], v["p99-ms-shared"], v["p99-ratio"])
	}
	b.WriteString("\n")
}

func renderTenancyTranslation(b *strings.Builder, rs []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 7. Full translation with pods\n\nBenchmarkTenancyTranslation: section 1's measurement of one Gateway isolating tenants, its Backends, " +
		"Secrets and HTTPRoutes spread round-robin over the namespaces, without pods and with running pods spread the same way (each reduced to " +
		"what the manager's cache keeps of a pod). With pods, the IR carries the caller table and the build makes the filter chain matcher and " +
		"the per-table caller identity lookups.\n\n")
	b.WriteString("| Backends + HTTPRoutes | namespaces | pods | ms/op | translate ms | build ms | CPU ms/op | allocs/op | MiB allocated/op | peak heap MiB | peak RSS MiB |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		n, ns, pods := tenancyOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| %d | %d | %d | %s | %s | %s | %s | %.0f | %.1f | %.0f | %.0f (%.0f) |\n", n, ns, pods, ms(v["ns/op"]), ms(v["translate-ns/op"]), ms(v["build-ns/op"]),
			ms(v["cpu-ns/op"]), v["allocs/op"], v["B/op"]/(1<<20), v["peak-heap-MiB"], v["peak-rss-MiB"], v["input-rss-MiB"])
	}
	if with, without, ok := tenancyPair(rs); ok {
		_, _, pods := tenancyOf(with.Name)
		w, wo := with.Values, without.Values
		fmt.Fprintf(b, "\nWhat %d pods change: CPU time %+.0f ms (%+.0f%%), translate %+.0f ms and build %+.0f ms of wall time, peak heap %+.0f MiB, "+
			"peak RSS %+.0f MiB, of which %+.0f MiB is the pods themselves (input RSS). Peak RSS comes from one cold run in a child process, "+
			"where the garbage collector's timing moves it by tens of MiB; the sampled peak heap is the steadier figure.\n", pods,
			(w["cpu-ns/op"]-wo["cpu-ns/op"])/1e6, 100*(w["cpu-ns/op"]/wo["cpu-ns/op"]-1), (w["translate-ns/op"]-wo["translate-ns/op"])/1e6,
			(w["build-ns/op"]-wo["build-ns/op"])/1e6, w["peak-heap-MiB"]-wo["peak-heap-MiB"], w["peak-rss-MiB"]-wo["peak-rss-MiB"], w["input-rss-MiB"]-wo["input-rss-MiB"])
	}
	b.WriteString("\n")
}

func renderChurn(b *strings.Builder, rs []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 8. Pod churn\n\nBenchmarkPodChurn: section 7's workload published to a real Envoy over ADS; then pods start and are deleted " +
		"(alternately) at a steady rate, each event going through the manager's pod path in-process, as controllers/callers.go does it: the event's " +
		"pod claim kept in an index (controllers/pod_index.go), translate.CallersOf the claims, translate.WithCallers on the IR last published, envoyconfig build, xds Publish; events " +
		"arriving during a round coalesce into the next. No translation runs. Each event is timed until Envoy acknowledged listeners and route tables " +
		"holding it (routed) and until it acknowledged every resource type of such a snapshot (ACK); settle is the last event's.\n\n")
	b.WriteString("| Backends | namespaces | pods | events | events/s | publishes | routed p50 / p99 / max ms | ACK p50 / p99 / max ms | settle ms |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		n, ns, pods := tenancyOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| %d | %d | %d | %d | %.0f | %.0f | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f | %.0f |\n", n, ns, pods, r.Iterations, v["events/s"], v["publishes"],
			v["routed-p50-ms"], v["routed-p99-ms"], v["routed-max-ms"], v["ack-p50-ms"], v["ack-p99-ms"], v["ack-max-ms"], v["ack-settle-ms"])
	}
	b.WriteString("\nWhat one round costs, next to a full translation and build of the same workload (cold, as at start; warm with one pod more, " +
		"as a pod event would cost if it translated, without publishing), and what Envoy did with the rounds (updates applied during the churn; " +
		"a listener updated in place keeps its connections):\n\n")
	b.WriteString("| Backends | round: build p50 / p99 ms | round: publish p50 / p99 ms | full translation warm / cold ms | CPU ms per publish | " +
		"Envoy CDS / LDS updates | listeners updated in place / modified | Envoy peak RSS MiB |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		n, _, _ := tenancyOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| %d | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.1f | %.0f / %.0f | %.0f / %.0f | %.0f |\n", n, v["build-p50-ms"], v["build-p99-ms"],
			v["publish-p50-ms"], v["publish-p99-ms"], v["full-warm-ms"], v["full-cold-ms"], v["cpu-ms/publish"], v["cds-updates"], v["lds-updates"],
			v["listeners-updated-in-place"], v["listeners-modified"], v["envoy-peak-rss-MiB"])
	}
	b.WriteString("\n")
}
