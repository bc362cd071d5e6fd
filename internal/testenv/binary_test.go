package testenv

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEnvoyIsThePinnedRelease runs the Envoy the tests will use and checks it is the
// release the generated configuration targets.
func TestEnvoyIsThePinnedRelease(t *testing.T) {
	out, err := exec.Command(EnvoyBinary(t), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("envoy --version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "/"+EnvoyVersion+"/") {
		t.Fatalf("envoy --version = %q, want release %s", out, EnvoyVersion)
	}
}

func TestMissingBinaryFailsUnderCI(t *testing.T) {
	t.Setenv("CI", "true")
	ft := &fakeTB{}
	func() {
		defer func() { _ = recover() }()
		MissingBinary(ft, "Envoy", "envoy", exec.ErrNotFound)
	}()
	if !ft.failed || ft.skipped {
		t.Fatalf("under CI=true a missing binary must fail, not skip (failed=%v skipped=%v)", ft.failed, ft.skipped)
	}
	if !strings.Contains(ft.msg, "run 'make envoy'") {
		t.Fatalf("message %q does not say how to install the binary", ft.msg)
	}
}

// fakeTB records Fatal and Skip instead of stopping the goroutine.
type fakeTB struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.failed = true
	f.msg = strings.TrimSpace(fmtArgs(args))
	panic("fatal")
}
func (f *fakeTB) Skip(args ...any) { f.skipped = true; f.msg = fmtArgs(args); panic("skip") }

func fmtArgs(args []any) string {
	var b strings.Builder
	for _, a := range args {
		if s, ok := a.(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}
