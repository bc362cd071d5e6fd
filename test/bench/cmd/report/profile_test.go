package main

import "testing"

func TestParseTopKeepsTheModulesFunctions(t *testing.T) {
	out := []byte(`File: bench.test
Showing nodes accounting for 1.2s, 100% of 1.2s total
      flat  flat%   sum%        cum   cum%
         0     0%     0%      1.20s   100%  github.com/portcullis-io/portcullis/test/bench.BenchmarkOneBackendChanged.func1
         0     0%     0%      1.10s 91.67%  github.com/portcullis-io/portcullis/egress/translate.Translate
     0.10s  8.33%  8.33%      0.50s 41.67%  runtime.mallocgc
         0     0%  8.33%      0.40s 33.33%  github.com/portcullis-io/portcullis/egress/translate.(*translator).buildRules
         0     0%  8.33%      0.20s 16.67%  github.com/portcullis-io/portcullis/egress/translate.sortedValues[go.shape.struct { Name string }]
`)
	got := parseTop(out)
	want := []hotFunction{
		{"egress/translate.Translate", 91.67},
		{"egress/translate.(*translator).buildRules", 33.33},
		{"egress/translate.sortedValues[go.shape.struct { Name string }]", 16.67},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
