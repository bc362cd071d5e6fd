//go:build linux

package operator

import (
	"testing"
	"time"
)

// TestServerNameEditShowsInTrafficWithinOneSecond edits the alpha Backend's
// tls.serverName with `kubectl patch` and measures, from kubectl returning, how long
// until the upstream sees a handshake with the new SNI; then it checks every later
// request carries it, still with the client certificate.
func TestServerNameEditShowsInTrafficWithinOneSecond(t *testing.T) {
	w := startWorld(t, "sni", 100, 0)
	w.waitServing(t)
	w.expectSNI(t, w.fx.AlphaHost, 10)

	edits := []struct {
		name, patchType, patch, want string
	}{
		{"setting serverName changes the SNI", "merge",
			`{"spec":{"destination":{"fqdn":{"tls":{"serverName":"` + w.fx.AlphaAltHost + `"}}}}}`, w.fx.AlphaAltHost},
		{"removing serverName goes back to the hostname", "json",
			`[{"op":"remove","path":"/spec/destination/fqdn/tls/serverName"}]`, w.fx.AlphaHost},
		{"setting serverName again", "merge",
			`{"spec":{"destination":{"fqdn":{"tls":{"serverName":"` + w.fx.AlphaAltHost + `"}}}}}`, w.fx.AlphaAltHost},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			returned, took := timedKubectl(t, "patch", "backend/alpha", "-n", w.fx.AppNS, "--type="+e.patchType, "-p", e.patch)
			p, ok := w.pollUntil(returned, pollTimeout, func(a answer) bool {
				seen, found := seenAt(w.alpha, a.path)
				return found && seen.SNI == e.want
			})
			t.Logf("serverName -> %s: first handshake with it %v after kubectl patch returned (kubectl took %v; %d requests, %d failed)",
				e.want, p.elapsed.Round(time.Millisecond), took.Round(time.Millisecond), p.requests, len(p.failed))
			if !ok {
				t.Fatalf("the upstream saw no SNI %s within %v of the edit; failures on the way: %v", e.want, pollTimeout, p.failed)
			}
			if p.elapsed >= editLimit {
				t.Errorf("the serverName edit took %v to show in traffic, want < %v", p.elapsed, editLimit)
			}
			if len(p.failed) > 0 {
				t.Errorf("requests failed while the serverName changed: %v", p.failed)
			}
			w.expectSNI(t, e.want, 10)
		})
	}
}

// expectSNI sends n requests and fails the test unless the alpha upstream saw each with
// this SNI and the gateway's client certificate.
func (w *world) expectSNI(t *testing.T, sni string, n int) {
	t.Helper()
	for _, a := range w.sendMany(t, n) {
		seen, ok := seenAt(w.alpha, a.path)
		if !ok || seen.SNI != sni || seen.ClientCN != clientCN {
			t.Fatalf("request %v: alpha saw it=%v with SNI %q and client %q; want SNI %q and client %q",
				a, ok, seen.SNI, seen.ClientCN, sni, clientCN)
		}
	}
}
