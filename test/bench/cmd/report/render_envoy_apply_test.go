package main

import (
	"strings"
	"testing"
)

// TestEnvoyApplySectionListsEverySize: a row per size, smallest first, whatever order
// the results came in; nothing without results.
func TestEnvoyApplySectionListsEverySize(t *testing.T) {
	r := func(n string, p50, p99 float64) result {
		return result{Name: "BenchmarkEnvoyAppliesOneChange/gateways=1/backends=" + n, Values: map[string]float64{"p50-ms": p50, "p99-ms": p99}}
	}
	var b strings.Builder
	renderEnvoyApply(&b, []result{r("10000", 342.1, 512.9), r("1000", 28.89, 33.9)})
	inOrder(t, b.String(), []string{"## 14.", "| 1000 | 28.9 | 33.9 |", "| 10000 | 342.1 | 512.9 |"})
	var none strings.Builder
	renderEnvoyApply(&none, nil)
	if none.Len() != 0 {
		t.Errorf("rendered without results: %q", none.String())
	}
}
