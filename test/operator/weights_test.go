//go:build linux

package operator

import (
	"fmt"
	"testing"
	"time"
)

// editLimit is the bound from an edit's kubectl returning to traffic showing it.
const editLimit = time.Second

// pollTimeout is how long polling goes on after an edit: far past editLimit, so a slow
// edit is measured and reported rather than cut off.
const pollTimeout = 15 * time.Second

// TestWeightEditShowsInTrafficWithinOneSecond flips the HTTPRoute's weights between the
// two Backends with `kubectl patch` and measures, from kubectl returning, how long until
// the first request lands on the side that just got all the weight; then it checks the
// flip is complete (every later request lands there).
func TestWeightEditShowsInTrafficWithinOneSecond(t *testing.T) {
	w := startWorld(t, "weights", 100, 0)
	w.waitServing(t)
	w.expectAllOn(t, "alpha", 20)

	flips := []struct {
		name        string
		alpha, beta int
		want        string
	}{
		{"100/0 to 0/100 moves all traffic to beta", 0, 100, "beta"},
		{"0/100 to 100/0 moves all traffic back to alpha", 100, 0, "alpha"},
		{"100/0 to 0/100 again", 0, 100, "beta"},
	}
	for _, f := range flips {
		t.Run(f.name, func(t *testing.T) {
			patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/rules/0/backendRefs/0/weight","value":%d},`+
				`{"op":"replace","path":"/spec/rules/0/backendRefs/1/weight","value":%d}]`, f.alpha, f.beta)
			returned, took := timedKubectl(t, "patch", "httproute/split", "-n", w.fx.AppNS, "--type=json", "-p", patch)
			p, ok := w.pollUntil(returned, pollTimeout, func(a answer) bool { return a.upstream == f.want })
			t.Logf("weights -> %d/%d: first request on %s %v after kubectl patch returned (kubectl took %v; %d requests, failed: %v)",
				f.alpha, f.beta, f.want, p.elapsed.Round(time.Millisecond), took.Round(time.Millisecond), p.requests, p.failed)
			if !ok {
				t.Fatalf("no request reached %s within %v of the weight edit; failures on the way: %v", f.want, pollTimeout, p.failed)
			}
			if p.elapsed >= editLimit {
				t.Errorf("the weight edit took %v to show in traffic, want < %v", p.elapsed, editLimit)
			}
			checkNothingFailed(t, p.failed)
			w.expectAllOn(t, f.want, 20)
		})
	}
}

// expectAllOn sends n requests and fails the test unless every one landed on upstream.
func (w *world) expectAllOn(t *testing.T, upstream string, n int) {
	t.Helper()
	for _, a := range w.sendMany(t, n) {
		if a.upstream != upstream {
			t.Fatalf("request %v landed on %q, want every request on %q", a, a.upstream, upstream)
		}
	}
}

// checkNothingFailed fails the test on any request that failed during the flip. A
// cluster whose weight drops to 0 leaves the snapshot only after every Envoy runs the
// routes that no longer send to it (make before break), so there is no "no cluster" 503.
func checkNothingFailed(t *testing.T, failed []answer) {
	t.Helper()
	for _, a := range failed {
		t.Errorf("request failed while the weights changed: %v", a)
	}
}
