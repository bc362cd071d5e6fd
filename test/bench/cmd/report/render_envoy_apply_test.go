package main

import (
	"strings"
	"testing"
)

// TestEnvoyApplySectionListsEverySize: a row per size and change, smallest first,
// whatever order the results came in; nothing without results.
func TestEnvoyApplySectionListsEverySize(t *testing.T) {
	r := func(bench, n string, p50, p99 float64) result {
		return result{Name: bench + "/gateways=1/backends=" + n, Values: map[string]float64{"p50-ms": p50, "p99-ms": p99}}
	}
	var b strings.Builder
	renderEnvoyApply(&b, []result{r("BenchmarkEnvoyAppliesOneChange", "10000", 342.1, 512.9), r("BenchmarkEnvoyAppliesOneRouteChange", "1000", 20.04, 31),
		r("BenchmarkEnvoyAppliesOneChange", "1000", 28.89, 33.9)})
	out := b.String()
	inOrder(t, out, []string{"## 14.", "| 1000 | one Backend: its cluster | 28.9 | 33.9 |", "| 10000 | one Backend: its cluster | 342.1 | 512.9 |"})
	if !strings.Contains(out, "| 1000 | one route: the route table | 20.0 | 31.0 |") {
		t.Errorf("no row for the route change:\n%s", out)
	}
	var none strings.Builder
	renderEnvoyApply(&none, nil)
	if none.Len() != 0 {
		t.Errorf("rendered without results: %q", none.String())
	}
}
