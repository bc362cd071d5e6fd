package main

import (
	"strconv"
	"strings"
	"testing"
)

func TestSummaryJudgesEveryTarget(t *testing.T) {
	translation := func(backends int, perBackendNs, rss float64) result {
		return result{Name: "BenchmarkFullTranslation/gateways=1/backends=" + strconv.Itoa(backends), Values: map[string]float64{
			"translate-ns/op": perBackendNs * float64(backends), "build-ns/op": 0, "cpu-ns/op": perBackendNs * float64(backends), "peak-rss-MiB": rss}}
	}
	tests := []struct {
		name string
		by   map[string][]result
		want []string // lines of the summary table, in order
	}{
		{
			name: "every target met",
			by: map[string][]result{
				"translation": {translation(100, 20e3, 60), translation(10000, 21e3, 300)},
				"change":      {{Name: "BenchmarkOneBackendChanged/gateways=1/backends=10000", Values: map[string]float64{"ns/op": 40e6}}},
				"propagation": {{Name: "BenchmarkPropagation/present=1000", Values: map[string]float64{"p50-ms": 120, "p99-ms": 400}}},
				"dataplane":   {{Name: "BenchmarkDataPlane/concurrency=16", Values: map[string]float64{"rps-ratio": 0.96, "rps-ratio-median-round": 0.99, "rps-ratio-worst-round": 0.95}}},
				"dns":         {{Name: "BenchmarkDNSReresolve/names=10000", Values: map[string]float64{"ns/op": 1.5e9, "names": 10000}}},
			},
			want: []string{"210.0 ms (translate + build) | yes", "300 MiB peak RSS | yes", "1.05× the per-Backend CPU time", "40.0 ms (translate + build + publish) | yes",
				"p50 120 ms, p99 400 ms | yes", "0.990 median of rounds (all rounds 0.960, worst 0.950) | yes", "1.50 s | yes"},
		},
		{
			name: "every target missed",
			by: map[string][]result{
				"translation": {translation(100, 20e3, 60), translation(10000, 200e3, 600)},
				"change":      {{Name: "BenchmarkOneBackendChanged/gateways=1/backends=10000", Values: map[string]float64{"ns/op": 51e6}}},
				"propagation": {{Name: "BenchmarkPropagation/present=1000", Values: map[string]float64{"p50-ms": 120, "p99-ms": 1200}}},
				"dataplane":   {{Name: "BenchmarkDataPlane/concurrency=16", Values: map[string]float64{"rps-ratio": 0.99, "rps-ratio-median-round": 0.96}}},
				"dns":         {{Name: "BenchmarkDNSReresolve/names=10000", Values: map[string]float64{"ns/op": 2.5e9, "names": 10000}}},
			},
			want: []string{"2000.0 ms (translate + build) | **no**", "600 MiB peak RSS | **no**", "10.00× the per-Backend CPU time of the smallest size | **no**",
				"51.0 ms (translate + build + publish) | **no**", "p99 1200 ms | **no**", "0.960 median of rounds (all rounds 0.990, worst 0.000) | **no**", "2.50 s | **no**"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			renderSummary(&b, tc.by)
			got := b.String()
			rest := got
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("summary lacks %q (in order):\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}
