package main

import (
	"strings"
	"testing"
)

// TestProviderSectionListsEveryGatewayCount: a row per Gateway count, smallest first,
// with the pass in milliseconds; nothing without results.
func TestProviderSectionListsEveryGatewayCount(t *testing.T) {
	r := func(n string, nsPerOp, perGateway float64) result {
		return result{Name: "BenchmarkProviderEnsureUnchanged/gateways=" + n, Values: map[string]float64{"ns/op": nsPerOp, "per-gateway-ms": perGateway}}
	}
	var b strings.Builder
	renderProvider(&b, []result{r("100", 2057595, 0.02058), r("10", 172660, 0.01726)})
	inOrder(t, b.String(), []string{"## 15.", "| 10 | 0.17 | 0.017 |", "| 100 | 2.06 | 0.021 |"})
	var none strings.Builder
	renderProvider(&none, nil)
	if none.Len() != 0 {
		t.Errorf("rendered without results: %q", none.String())
	}
}
