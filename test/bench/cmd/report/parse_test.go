package main

import (
	"strings"
	"testing"
)

func TestParseResults(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []result
		wantErr string
	}{
		{
			name: "custom metrics and the GOMAXPROCS suffix",
			in: "goos: linux\nBenchmarkFullTranslation/gateways=1/backends=100-2   \t 3\t 14492528 ns/op\t 2754606 build-ns/op\t 47.47 peak-rss-MiB\n" +
				"PASS\nok  \tgithub.com/x/test/bench\t2.3s\n",
			want: []result{{Name: "BenchmarkFullTranslation/gateways=1/backends=100", Iterations: 3,
				Values: map[string]float64{"ns/op": 14492528, "build-ns/op": 2754606, "peak-rss-MiB": 47.47}}},
		},
		{
			name: "two results and noise in between",
			in:   "BenchmarkA-8 10 5.5 ns/op\n--- FAIL: nothing\nBenchmarkB/x=1 1 2 p50-ms 3 p99-ms\n",
			want: []result{
				{Name: "BenchmarkA", Iterations: 10, Values: map[string]float64{"ns/op": 5.5}},
				{Name: "BenchmarkB/x=1", Iterations: 1, Values: map[string]float64{"p50-ms": 2, "p99-ms": 3}},
			},
		},
		{name: "a value without a unit", in: "BenchmarkA-2 1 5 ns/op 7\n", wantErr: "pairs"},
		{name: "a value that is not a number", in: "BenchmarkA-2 1 five ns/op\n", wantErr: `value "five"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseResults(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d results %+v, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if got[i].Name != tc.want[i].Name || got[i].Iterations != tc.want[i].Iterations || len(got[i].Values) != len(tc.want[i].Values) {
					t.Fatalf("result %d = %+v, want %+v", i, got[i], tc.want[i])
				}
				for unit, v := range tc.want[i].Values {
					if got[i].Values[unit] != v {
						t.Errorf("result %d %s = %v, want %v", i, unit, got[i].Values[unit], v)
					}
				}
			}
		})
	}
}
