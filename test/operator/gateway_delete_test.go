//go:build linux

package operator

import (
	"testing"
	"time"
)

// deleteLimit bounds how long a deleted Gateway's Envoy may keep its listener: a
// reconcile, SIGTERM and Envoy's exit take well under a second, with room for a loaded
// machine.
const deleteLimit = 5 * time.Second

// TestDeletingGatewayStopsItsEnvoy deletes the Gateway with kubectl and checks that its
// Envoy process exits and its listener port stops accepting connections.
func TestDeletingGatewayStopsItsEnvoy(t *testing.T) {
	w := startWorld(t, "delete", 100, 0)
	w.waitServing(t)
	dir := w.mgr.gatewayDir(w.fx.GatewayNS, "egress")
	if pids := envoyPIDs(dir); len(pids) != 1 {
		t.Fatalf("Envoy processes for the Gateway: %v, want exactly one", pids)
	}

	if !accepts(w.fx.Port) {
		t.Fatalf("the listener on port %d refuses connections before the delete", w.fx.Port)
	}

	// Poll from the moment kubectl starts: the listener may close before kubectl returns.
	start := time.Now()
	type result struct {
		after time.Duration
		ok    bool
	}
	closed := make(chan result, 1)
	go func() {
		d, ok := timeUntilRefused(w.fx.Port, start, pollTimeout)
		closed <- result{d, ok}
	}()
	_, took := timedKubectl(t, "delete", "gateway/egress", "-n", w.fx.GatewayNS)
	r := <-closed
	refused := r.after
	t.Logf("listener refused connections %v after kubectl delete started (kubectl took %v)", refused.Round(time.Millisecond), took.Round(time.Millisecond))
	if !r.ok {
		t.Fatalf("the listener on port %d still accepts connections %v after the Gateway was deleted", w.fx.Port, pollTimeout)
	}
	if refused-took >= deleteLimit {
		t.Errorf("the listener closed %v after kubectl delete returned, want < %v", refused-took, deleteLimit)
	}
	if err := waitNoEnvoys(dir, deleteLimit); err != nil {
		t.Errorf("after deleting the Gateway: %v", err)
	}
	if pids := envoyPIDs(w.mgr.workDir); len(pids) != 0 {
		t.Errorf("Envoy processes still run for the manager: %v", pids)
	}
}
