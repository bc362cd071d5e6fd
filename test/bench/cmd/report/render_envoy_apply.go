package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// envoyApplyStep runs BenchmarkEnvoyAppliesOneChange and BenchmarkEnvoyAppliesOneRouteChange
// at sizes (comma-separated).
func envoyApplyStep(sizes string) step {
	return step{key: "envoy-apply", bench: "^BenchmarkEnvoyApplies(OneChange|OneRouteChange)$", benchtime: "20x", env: []string{"BENCH_ENVOY_APPLY_SIZES=" + sizes}}
}

// appliedChange names what a result of the step changed.
func appliedChange(name string) string {
	if strings.HasPrefix(name, "BenchmarkEnvoyAppliesOneRouteChange") {
		return "one route: the route table"
	}
	return "one Backend: its cluster"
}

// renderEnvoyApply writes the section on Envoy's half of a change. It has no target of
// its own: it is the part of the first-200 row (section 3) that depends on the xDS
// protocol, not on the manager.
func renderEnvoyApply(b *strings.Builder, rs []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 14. Envoy's half of a change\n\nBenchmarkEnvoyAppliesOneChange: the workload of section 2 translated and published " +
		"to one Envoy over the xDS server (incremental ADS, as the bootstrap asks); one Backend's cluster changes, is published, and the time " +
		"runs until Envoy acknowledged every type of the new snapshot. No manager, API server or upstream. Envoy is sent the changed cluster " +
		"and its endpoints only; over state-of-the-world ADS (before 2026-11-24) it was sent every cluster, p50 342 ms at 10,000. It is the " +
		"part of \"first 200\" that the manager's speed cannot reduce. BenchmarkEnvoyAppliesOneRouteChange changes one HTTPRoute's path " +
		"instead: the Gateway's route table, one resource holding a virtual host per route, is sent and applied whole.\n\n")
	b.WriteString("| Backends | what changed | p50 ms | p99 ms |\n| ---: | --- | ---: | ---: |\n")
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y result) int {
		return cmp.Or(backendsOf(x.Name)-backendsOf(y.Name), strings.Compare(appliedChange(x.Name), appliedChange(y.Name)))
	})
	for _, r := range rs {
		fmt.Fprintf(b, "| %d | %s | %.1f | %.1f |\n", backendsOf(r.Name), appliedChange(r.Name), r.Values["p50-ms"], r.Values["p99-ms"])
	}
	b.WriteString("\n")
}
