package conformance

import "testing"

// TestNotableLines: the diagnostics keep the lines that explain a failure and drop the
// rest of a busy log.
func TestNotableLines(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{`{"level":"error","ts":"2026-11-29T05:28:58Z","msg":"Reconciler error"}`, true},
		{`{"level":"info","ts":"2026-11-29T05:28:58Z","msg":"translated"}`, false},
		{`{"level":"info","msg":"Envoy connected","gateway":"ns/gw"}`, false},
		{`[2026-11-29 05:28:02.508][1][warning][config] [source/x.cc:138] gRPC config for type.googleapis.com/envoy.config.cluster.v3.Cluster rejected: bad`, true},
		{`[2026-11-29 05:28:02.508][1][info][main] [source/server/server.cc:467] filter_state.object: envoy.bool`, false},
		{`{"backend":"ns/b","decision":"allowed","responseCode":503,"responseFlags":"UF"}`, true},
		{`{"backend":"ns/b","decision":"allowed","responseCode":200,"responseFlags":"-"}`, false},
		{`{"backend":"ns/b","decision":"allowed","responseCode":400,"responseFlags":"-"}`, true},
		{`{"backend":"ns/b","decision":"allowed","responseCode":403,"responseFlags":"-"}`, true},
		{`{"backend":"ns/b","decision":"allowed","responseCode":404,"responseFlags":"NR"}`, false},
	} {
		if got := notable.MatchString(tc.line); got != tc.want {
			t.Errorf("notable(%s) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
