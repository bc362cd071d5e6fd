// Package testenv gives tests the real parts they run against: the kube-apiserver and
// etcd that `make envtest-assets` builds, and the Envoy that `make envoy` installs. A
// missing binary fails the test under CI=true and skips it, with the command that
// installs it, elsewhere.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// InCI reports whether the tests run under CI, where nothing may be skipped for want of a tool.
func InCI() bool { return os.Getenv("CI") == "true" }

// RepoRoot returns the directory holding the module's go.mod, found upwards from the
// working directory (go test runs each package in its own directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && filepath.Base(filepath.Dir(dir)) != "tools" {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// MissingBinary fails (under CI) or skips the test because a tool is missing, naming the
// make target that installs it.
func MissingBinary(t testing.TB, what, makeTarget string, cause error) {
	t.Helper()
	msg := fmt.Sprintf("%s is missing (%v); run 'make %s'", what, cause, makeTarget)
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// EnvoyBinary returns the Envoy binary to run: $ENVOY_BIN, else bin/envoy-<version> of
// the repo, else an envoy on PATH.
func EnvoyBinary(t testing.TB) string {
	t.Helper()
	path, err := envoyPath()
	if err != nil {
		MissingBinary(t, "Envoy", "envoy", err)
	}
	return path
}

// EnvoyVersion is the Envoy release the Makefile installs.
const EnvoyVersion = "1.40.0"

func envoyPath() (string, error) {
	if p := os.Getenv("ENVOY_BIN"); p != "" {
		return executable(p)
	}
	if root, err := RepoRoot(); err == nil {
		if p, err := executable(filepath.Join(root, "bin", "envoy-"+EnvoyVersion)); err == nil {
			return p, nil
		}
	}
	return exec.LookPath("envoy")
}

// KubectlBinary returns kubectl from PATH.
func KubectlBinary(t testing.TB) string {
	t.Helper()
	return onPath(t, "kubectl")
}

// CurlBinary returns curl from PATH, for tests that prove a claim with the client users
// run.
func CurlBinary(t testing.TB) string {
	t.Helper()
	return onPath(t, "curl")
}

// onPath returns a tool from PATH; missing, it fails the test under CI=true and skips it
// elsewhere.
func onPath(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s is missing (%v); install %s and put it on PATH", name, err, name)
		if InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

func executable(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", path)
	}
	return path, nil
}
