//go:build linux

// Package operator runs Portcullis the way a user runs it on one machine: the real
// `portcullis manager --provider host` binary against a real kube-apiserver, driven only
// through kubectl, with the Envoy processes the manager starts itself, local mTLS
// upstreams, and a scripted DNS server for the Backends' names. It is Linux only: it
// finds the manager's Envoys in /proc and relies on the host provider's parent-death
// signal.
package operator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// pkg holds what every test of the package shares: one API server, an admin kubeconfig
// for it, and a scratch directory (removed at the end) for the built binary and
// kubectl's discovery cache.
var pkg struct {
	api           *testenv.APIServer
	scratch       string
	kubeconfig    string
	kubeconfigErr error
}

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "portcullis-operator-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: scratch directory: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	pkg.scratch = dir
	return testenv.RunWithAPIServer(m, func(a *testenv.APIServer) {
		pkg.api = a
		pkg.kubeconfig, pkg.kubeconfigErr = a.Kubeconfig(dir)
	})
}

// kubeconfigPath is the admin kubeconfig every kubectl and the manager use.
func kubeconfigPath(t *testing.T) string {
	t.Helper()
	if pkg.kubeconfigErr != nil {
		t.Fatalf("writing the kubeconfig of the test API server: %v", pkg.kubeconfigErr)
	}
	return pkg.kubeconfig
}

// built is the portcullis binary, compiled once per package run.
var built struct {
	once sync.Once
	path string
	err  error
}

// portcullisBinary builds ./cmd/portcullis into the scratch directory on first use, so
// the tests run the very CLI a user runs, not the manager wired in-process.
func portcullisBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() { built.path, built.err = buildPortcullis() })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

func buildPortcullis() (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go tool is needed to build cmd/portcullis: %w", err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(pkg.scratch, "portcullis")
	cmd := exec.Command(goTool, "build", "-o", path, "./cmd/portcullis")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/portcullis: %v\n%s", err, out)
	}
	return path, nil
}
