//go:build linux

package operator

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestStoppedManagerLeavesNoEnvoy stops the manager while its Gateway is live and checks
// the Gateway's Envoy goes with it: on SIGTERM the manager stops it before exiting
// cleanly; on SIGKILL, which the manager cannot handle, the kernel's parent-death signal
// stops it.
func TestStoppedManagerLeavesNoEnvoy(t *testing.T) {
	tests := []struct {
		name   string
		world  string // the world's name, which names its namespaces
		signal syscall.Signal
		// cleanExit is whether the manager must exit with status 0.
		cleanExit bool
		// envoyGoneAtExit is whether no Envoy may be left the moment the manager exited.
		envoyGoneAtExit bool
	}{
		{"SIGTERM: the manager stops its Envoy and exits 0", "stop-term", syscall.SIGTERM, true, true},
		{"SIGKILL: the parent-death signal stops Envoy", "stop-kill", syscall.SIGKILL, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := startWorld(t, tt.world, 100, 0)
			w.waitServing(t)
			if pids := envoyPIDs(w.mgr.workDir); len(pids) != 1 {
				t.Fatalf("Envoy processes of the manager: %v, want exactly one", pids)
			}

			start := time.Now()
			err := w.mgr.signal(tt.signal)
			exited := time.Since(start)
			checkExit(t, err, tt.cleanExit)
			if pids := envoyPIDs(w.mgr.workDir); tt.envoyGoneAtExit && len(pids) != 0 {
				t.Errorf("Envoy processes %v still run after the manager exited", pids)
			}
			if err := waitNoEnvoys(w.mgr.workDir, deleteLimit); err != nil {
				t.Error(err)
			}
			refused, ok := timeUntilRefused(w.fx.Port, start, deleteLimit)
			if !ok {
				t.Errorf("the Gateway's listener still accepts connections %v after %v", deleteLimit, tt.signal)
			}
			t.Logf("%v: manager exited after %v, listener refused after %v", tt.signal, exited.Round(time.Millisecond), refused.Round(time.Millisecond))
		})
	}
}

// checkExit checks how the manager exited: with status 0, or killed by a signal.
func checkExit(t *testing.T, err error, clean bool) {
	t.Helper()
	if clean {
		if err != nil {
			t.Fatalf("the manager's exit after SIGTERM: %v, want status 0", err)
		}
		return
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the manager's exit: %v, want it killed by a signal", err)
	}
}
