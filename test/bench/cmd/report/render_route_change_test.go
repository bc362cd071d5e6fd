package main

import (
	"strings"
	"testing"
)

// TestRouteChangeSectionListsEverySize: a row per size, smallest first, with the whole
// change, its three parts, the allocation and the share of deltas; nothing when the step
// did not run.
func TestRouteChangeSectionListsEverySize(t *testing.T) {
	r := func(n string, total, tr, bu, pu, bytes, deltas float64) result {
		return result{Name: "BenchmarkOneRouteChanged/gateways=1/backends=" + n, Values: map[string]float64{
			"ns/op": total, "translate-ns/op": tr, "build-ns/op": bu, "publish-ns/op": pu, "B/op": bytes, "deltas/op": deltas}}
	}
	var b strings.Builder
	renderRouteChange(&b, []result{r("10000", 114e6, 28.6e6, 15.9e6, 69.6e6, 53.2e6, 1), r("1000", 8.5e6, 2e6, 1e6, 5.5e6, 5.5e6, 0.5)})
	inOrder(t, b.String(), []string{"| 1000 | 8.5 | 2.0 | 1.0 | 5.5 | 5.5 | 0.50 |", "| 10000 | 114.0 | 28.6 | 15.9 | 69.6 | 53.2 | 1.00 |"})

	var none strings.Builder
	renderRouteChange(&none, nil)
	if none.Len() != 0 {
		t.Errorf("rendered %q without results", none.String())
	}
}
