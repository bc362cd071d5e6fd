package main

import (
	"fmt"
	"strings"
)

// envoyApplyStep runs BenchmarkEnvoyAppliesOneChange at sizes (comma-separated).
func envoyApplyStep(sizes string) step {
	return step{key: "envoy-apply", bench: "^BenchmarkEnvoyAppliesOneChange$", benchtime: "20x", env: []string{"BENCH_ENVOY_APPLY_SIZES=" + sizes}}
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
		"part of \"first 200\" that the manager's speed cannot reduce.\n\n")
	b.WriteString("| Backends | p50 ms | p99 ms |\n| ---: | ---: | ---: |\n")
	for _, r := range bySize(rs) {
		fmt.Fprintf(b, "| %d | %.1f | %.1f |\n", backendsOf(r.Name), r.Values["p50-ms"], r.Values["p99-ms"])
	}
	b.WriteString("\n")
}
