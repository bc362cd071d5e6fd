//go:build linux

package operator

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// kubectlTimeout bounds one kubectl run; `kubectl wait` gets its own --timeout below it.
const kubectlTimeout = 2 * time.Minute

// kubectl runs kubectl against the test API server with stdin (may be empty) and
// returns its combined output; err is non-nil when it exits non-zero. Its discovery
// cache lives in the scratch directory, not in the user's home.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	full := append([]string{"--kubeconfig", kubeconfigPath(t), "--cache-dir", filepath.Join(pkg.scratch, "kube-cache")}, args...)
	cmd := exec.CommandContext(ctx, testenv.KubectlBinary(t), full...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), err
}

// mustKubectl is kubectl that fails the test on a non-zero exit.
func mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// waitProgrammed runs `kubectl wait --for=condition=Programmed` on one object, as a user
// would after applying it, and returns kubectl's output.
func waitProgrammed(t *testing.T, namespace, object string) string {
	t.Helper()
	out := mustKubectl(t, "", "wait", "--namespace", namespace, "--for=condition=Programmed", object, "--timeout=60s")
	if !strings.Contains(out, "condition met") {
		t.Fatalf("kubectl wait %s exited 0 but printed %q, want \"condition met\"", object, out)
	}
	return out
}

// timedKubectl runs a kubectl command that must succeed and returns when it returned
// and how long it took; edit latencies are measured from that moment.
func timedKubectl(t *testing.T, args ...string) (returned time.Time, took time.Duration) {
	t.Helper()
	start := time.Now()
	mustKubectl(t, "", args...)
	returned = time.Now()
	return returned, returned.Sub(start)
}
