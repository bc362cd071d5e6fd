package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestSummaryJudgesEveryTarget(t *testing.T) {
	translation := func(backends int, perBackendNs, rss float64) result {
		return result{Name: "BenchmarkFullTranslation/gateways=1/backends=" + strconv.Itoa(backends), Values: map[string]float64{
			"translate-ns/op": perBackendNs * float64(backends), "build-ns/op": 0, "cpu-ns/op": perBackendNs * float64(backends), "peak-rss-MiB": rss}}
	}
	tenancy := func(namespaces, pods int, ns, rss float64) result {
		return result{Name: fmt.Sprintf("BenchmarkTenancyTranslation/gateways=1/backends=10000/namespaces=%d/pods=%d", namespaces, pods),
			Values: map[string]float64{"translate-ns/op": ns / 2, "build-ns/op": ns / 2, "cpu-ns/op": ns, "peak-heap-MiB": rss}}
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
				"dataplane-isolation": {{Name: "BenchmarkDataPlaneIsolation/concurrency=16/connections=keep-alive",
					Values: map[string]float64{"rps-ratio": 0.97, "rps-ratio-median-round": 0.98, "rps-ratio-worst-round": 0.9}}},
				"tenancy-translation": {tenancy(500, 0, 600e6, 300), tenancy(500, 10000, 700e6, 330)},
				"churn": {{Name: "BenchmarkPodChurn/gateways=1/backends=10000/namespaces=500/pods=10000/rate=100",
					Values: map[string]float64{"events/s": 100, "ack-p50-ms": 200, "ack-p99-ms": 600, "ack-max-ms": 700}}},
				"tunnel": {{Name: "BenchmarkConnectTunnel", Values: map[string]float64{"tunnel-MB/s": 950, "direct-MB/s": 1000, "ratio": 0.95, "sustained-ratio": 0.9, "tunnel-vs-copy-relay": 0.98}}},
			},
			want: []string{"210.0 ms (translate + build) | yes", "300 MiB peak RSS | yes", "1.05× the per-Backend CPU time", "40.0 ms (translate + build + publish) | yes",
				"p50 120 ms, p99 400 ms | yes", "0.990 median of rounds (all rounds 0.960, worst 0.950) | yes", "1.50 s | yes",
				"(keep-alive connections) | ≥ 0.95 | 0.980 median of rounds (all rounds 0.970, worst 0.900) | yes",
				"10000 Backends + HTTPRoutes over 500 namespaces, 10000 pods | < 1 s | 700.0 ms (the pods: +100 ms CPU, +30 MiB peak heap) | yes",
				"100 events/s among 10000 pods, 10000 Backends: event to Envoy ACK | settles < 1 s | p50 200 ms, p99 600 ms, max 700 ms | yes",
				"vs a direct connection | ≥ 0.9 | 950 MB/s vs 1000 MB/s: 0.950 (sustained 0.900; vs a relay that only copies: 0.980) | yes"},
		},
		{
			name: "every target missed",
			by: map[string][]result{
				"translation": {translation(100, 20e3, 60), translation(10000, 200e3, 600)},
				"change":      {{Name: "BenchmarkOneBackendChanged/gateways=1/backends=10000", Values: map[string]float64{"ns/op": 51e6}}},
				"propagation": {{Name: "BenchmarkPropagation/present=1000", Values: map[string]float64{"p50-ms": 120, "p99-ms": 1200}}},
				"dataplane":   {{Name: "BenchmarkDataPlane/concurrency=16", Values: map[string]float64{"rps-ratio": 0.99, "rps-ratio-median-round": 0.96}}},
				"dns":         {{Name: "BenchmarkDNSReresolve/names=10000", Values: map[string]float64{"ns/op": 2.5e9, "names": 10000}}},
				"dataplane-isolation": {{Name: "BenchmarkDataPlaneIsolation/concurrency=16/connections=per-request",
					Values: map[string]float64{"rps-ratio": 0.97, "rps-ratio-median-round": 0.94}}},
				"tenancy-translation": {tenancy(500, 0, 900e6, 300), tenancy(500, 10000, 1100e6, 330)},
				"churn": {{Name: "BenchmarkPodChurn/gateways=1/backends=10000/namespaces=500/pods=10000/rate=100",
					Values: map[string]float64{"events/s": 100, "ack-p50-ms": 200, "ack-p99-ms": 1600, "ack-max-ms": 1700}}},
				"tunnel": {{Name: "BenchmarkConnectTunnel", Values: map[string]float64{"tunnel-MB/s": 700, "direct-MB/s": 1000, "ratio": 0.7}}},
			},
			want: []string{"2000.0 ms (translate + build) | **no**", "600 MiB peak RSS | **no**", "10.00× the per-Backend CPU time of the smallest size | **no**",
				"51.0 ms (translate + build + publish) | **no**", "p99 1200 ms | **no**", "0.960 median of rounds (all rounds 0.990, worst 0.000) | **no**", "2.50 s | **no**",
				"(per-request connections) | ≥ 0.95 | 0.940 median of rounds", "| **no**", "1100.0 ms (the pods: +200 ms CPU, +30 MiB peak heap) | **no**", "p99 1600 ms, max 1700 ms | **no**", "700 MB/s vs 1000 MB/s: 0.700 (sustained 0.000; vs a relay that only copies: 0.000) | **no**"},
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
