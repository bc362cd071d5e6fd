package main

import (
	"strings"
	"testing"
)

func processResults(wallAt10k, rssAt10k, cpuAt30k float64) []result {
	r := func(n string, wall, cpu, rss float64) result {
		return result{Name: "BenchmarkTranslateProcess/backends=" + n, Values: map[string]float64{"wall-ms": wall, "cpu-ms": cpu, "peak-rss-MiB": rss}}
	}
	// Out of order: the summary sorts by size.
	return []result{r("10000", wallAt10k, 6000, rssAt10k), r("1000", 600, 900, 200), r("30000", 12000, cpuAt30k, 1000)}
}

// TestProcessSummaryJudgesWallRSSAndGrowth: the 10,000 row is met only when both wall
// time and peak RSS are under their targets; growth compares CPU per Backend of the
// largest size with the smallest's.
func TestProcessSummaryJudgesWallRSSAndGrowth(t *testing.T) {
	tests := []struct {
		name string
		in   []result
		want []string
	}{
		{"both met, linear", processResults(1900, 390, 27000), []string{"| 1.90 s, 390 MiB | yes |", "| 1.00× the per-Backend CPU time of 1000 Backends at 30000 | yes |"}},
		{"too slow", processResults(3700, 390, 27000), []string{"| 3.70 s, 390 MiB | **no** |"}},
		{"too big", processResults(1900, 420, 27000), []string{"| 1.90 s, 420 MiB | **no** |"}},
		{"worse than linear", processResults(1900, 390, 54000), []string{"| 2.00× the per-Backend CPU time of 1000 Backends at 30000 | **no** |"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			renderProcessSummary(&b, tc.in)
			inOrder(t, b.String(), tc.want)
		})
	}
}

// TestProcessSectionListsEverySize: the section's table has a row per size, in order.
func TestProcessSectionListsEverySize(t *testing.T) {
	var b strings.Builder
	renderProcess(&b, processResults(1900, 390, 27000))
	inOrder(t, b.String(), []string{"## 13.", "| 1000 | 600 | 900 | 200 |", "| 10000 | 1900 | 6000 | 390 |", "| 30000 | 12000 | 27000 | 1000 |"})
}
