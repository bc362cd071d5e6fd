package main

import (
	"strings"
	"testing"
)

// TestDeltaSectionListsEverySizeWithItsShareOfDeltas: a row per size, smallest first,
// with the translation time, the allocation and the share of changes that were deltas;
// nothing when the step did not run.
func TestDeltaSectionListsEverySizeWithItsShareOfDeltas(t *testing.T) {
	r := func(n string, ns, bytes, deltas float64) result {
		return result{Name: "BenchmarkDeltaOneBackendChanged/gateways=1/backends=" + n,
			Values: map[string]float64{"translate-ns/op": ns, "B/op": bytes, "deltas/op": deltas}}
	}
	var b strings.Builder
	renderDelta(&b, []result{r("10000", 5.6e6, 8.2e6, 1), r("1000", 0.45e6, 0.9e6, 0.5)})
	inOrder(t, b.String(), []string{"| 1000 | 0.5 | 0.9 | 0.50 |", "| 10000 | 5.6 | 8.2 | 1.00 |"})

	var none strings.Builder
	renderDelta(&none, nil)
	if none.Len() != 0 {
		t.Errorf("rendered %q without results", none.String())
	}
}
