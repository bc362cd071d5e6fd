// Package quickstart runs the README's Quickstart as written: `portcullis local --demo`
// (what `make run` runs), then the README's curl and kubectl lines, compared with the
// output the README shows; then Ctrl-C, a check that nothing it started is left, and a
// second start on the same data directory.
package quickstart

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// Generous limits for a loaded two-core machine.
const (
	readyTimeout = 5 * time.Minute
	stopTimeout  = 2 * time.Minute
)

// The ports the README's lines name: the demo Gateway's listener and the demo API
// (its Backend's port). Every other port the test picks free.
var readmePorts = []int{10080, 19443}

func TestQuickstartAsWritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("checking that nothing is left running reads /proc (Linux only)")
	}
	assets, envoy := requireTools(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	q, err := readQuickstart(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	checkSetupCommands(t, q)
	bin := buildPortcullis(t, root)
	requirePortsFree(t)

	// The README's paths are relative to the repository root, where make run keeps its
	// data in tmp/local: the test plays the root with a fresh directory.
	work := t.TempDir()
	dataDir := filepath.Join(work, "tmp", "local")
	args := localArgs(t, dataDir, assets, envoy)

	first := startLocal(t, bin, work, dataDir, args)
	t.Logf("first start: ready after %s", first.waitReady(t, readyTimeout).Round(time.Millisecond))
	checkPrinted(t, first.Stdout(), q)
	checkEnvoyAdmin(t, first.Stdout())
	checkSecondRunRefused(t, bin, work, args, first)
	checkCurl(t, work, q)
	checkKubectl(t, work, q)
	created := namespaceCreated(t, work)
	checkRunning(t, dataDir, envoy)
	t.Logf("first stop: %s after SIGINT", first.interrupt(t, stopTimeout).Round(time.Millisecond))
	checkNothingLeft(t, dataDir, first)

	second := startLocal(t, bin, work, dataDir, args)
	t.Logf("second start on the same data directory: ready after %s", second.waitReady(t, readyTimeout).Round(time.Millisecond))
	checkPrinted(t, second.Stdout(), q)
	checkOneGatewayLine(t, second.Stdout())
	checkEnvoyAdmin(t, second.Stdout())
	checkCurl(t, work, q)
	if again := namespaceCreated(t, work); again != created {
		t.Errorf("namespace demo was created at %s in the first run and %s in the second: etcd's data did not persist", created, again)
	}
	t.Logf("second stop: %s after SIGINT", second.interrupt(t, stopTimeout).Round(time.Millisecond))
	checkNothingLeft(t, dataDir, second)
}

// requireTools returns the control plane's assets directory and Envoy; a missing tool
// fails under CI=true.
func requireTools(t *testing.T) (assets, envoy string) {
	t.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		testenv.MissingBinary(t, "kube-apiserver and etcd", "envtest-assets", err)
	}
	envoy = testenv.EnvoyBinary(t)
	testenv.KubectlBinary(t)
	if _, err := exec.LookPath("curl"); err != nil {
		msg := fmt.Sprintf("curl is missing (%v): the README's Quickstart uses it; install curl", err)
		if testenv.InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return assets, envoy
}

// checkSetupCommands: the README's first block runs make run and make test, and both
// targets exist.
func checkSetupCommands(t *testing.T, q quickstart) {
	t.Helper()
	for _, want := range []string{"make run", "make test"} {
		found := false
		for _, l := range q.setup {
			found = found || strings.HasPrefix(strings.TrimSpace(l), want)
		}
		if !found {
			t.Errorf("the Quickstart's first block does not run %q: %q", want, q.setup)
		}
	}
}

func buildPortcullis(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "portcullis")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/portcullis")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/portcullis: %v\n%s", err, out)
	}
	return bin
}

func requirePortsFree(t *testing.T) {
	t.Helper()
	for _, p := range readmePorts {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d, which the README's Quickstart uses, is taken (is make run running? stop it): %v", p, err)
		}
		l.Close()
	}
}

func localArgs(t *testing.T, dataDir, assets, envoy string) []string {
	port := func() string { return fmt.Sprint(xdstest.FreePort(t)) }
	return []string{"local", "--demo", "--data-dir", dataDir, "--assets-dir", assets, "--envoy-binary", envoy,
		"--apiserver-port", port(), "--etcd-port", port(), "--etcd-peer-port", port(), "--xds-port", port(),
		"--metrics-bind-address", "0", "--health-probe-bind-address", "127.0.0.1:" + port()}
}

// checkPrinted: the binary tells the user the README's curl line, and the demo's
// DNS guard exception loudly.
func checkPrinted(t *testing.T, stdout string, q quickstart) {
	t.Helper()
	for _, want := range []string{"  " + q.curl + "\n", "DEMO ONLY", "--allow-cidr 127.0.0.0/8", "gateway demo/demo: address 127.0.0.1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("portcullis local did not print %q; it printed:\n%s", want, stdout)
		}
	}
}

// checkOneGatewayLine: the demo Gateway's line is printed once, for this run's Envoy.
// On a data directory kept from an earlier run the Gateway's status is complete from the
// start, and a line naming the earlier Envoy's admin address used to come first.
func checkOneGatewayLine(t *testing.T, stdout string) {
	t.Helper()
	if n := strings.Count(stdout, "portcullis local: gateway demo/demo: "); n != 1 {
		t.Errorf("portcullis local printed the demo Gateway's line %d times, want once; it printed:\n%s", n, stdout)
	}
}

// adminLine finds the Envoy admin URL in the demo Gateway's line.
var adminLine = regexp.MustCompile(`(?m)^portcullis local: gateway demo/demo: .*; Envoy admin (http://127\.0\.0\.1:[0-9]+)$`)

// checkEnvoyAdmin: the Gateway's line names its Envoy's admin interface, and it answers.
func checkEnvoyAdmin(t *testing.T, stdout string) {
	t.Helper()
	m := adminLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Errorf("portcullis local did not print the demo Gateway's Envoy admin address; it printed:\n%s", stdout)
		return
	}
	resp, err := http.Get(m[1] + "/ready")
	if err != nil {
		t.Fatalf("the printed Envoy admin %s: %v", m[1], err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s/ready: %s, want 200", m[1], resp.Status)
	}
}

// checkSecondRunRefused: while one run holds the data directory, a second make run
// stops at once, naming the first by its PID, and the first keeps running.
func checkSecondRunRefused(t *testing.T, bin, dir string, args []string, first *localRun) {
	t.Helper()
	second := startLocal(t, bin, dir, first.dataDir, args)
	select {
	case <-second.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("a second portcullis local on the same data directory did not stop within 30s")
	}
	want := fmt.Sprintf("another portcullis local (pid %d) runs with %s and holds its ports", first.cmd.Process.Pid, first.dataDir)
	if second.waitErr == nil || !strings.Contains(second.Stderr(), want) {
		t.Errorf("second run: %v, stderr:\n%s\nwant a failure saying %q", second.waitErr, second.Stderr(), want)
		return
	}
	t.Logf("a second run on the same data directory was refused: %s", strings.TrimSpace(second.Stderr()))
}

// shell runs a README line as a newcomer would, from the root-like directory, with no
// KUBECONFIG and no proxy in the environment.
func shell(t *testing.T, dir, line string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(name) {
		case "kubeconfig", "http_proxy", "https_proxy", "all_proxy":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

func checkCurl(t *testing.T, dir string, q quickstart) {
	t.Helper()
	got := strings.TrimRight(shell(t, dir, q.curl), "\n")
	if got != q.curlOutput {
		t.Errorf("%s\n got: %q\nwant: %q (the README's output)", q.curl, got, q.curlOutput)
	}
}

// checkKubectl compares every column but AGE with the README, and checks the demo
// Backend is True in every condition column.
func checkKubectl(t *testing.T, dir string, q quickstart) {
	t.Helper()
	out := shell(t, dir, q.kubectl)
	got, want := table(strings.Split(out, "\n")), table(q.kubectlOutput)
	if len(got) != len(want) {
		t.Fatalf("%s printed %d rows, the README shows %d:\n%s", q.kubectl, len(got), len(want), out)
	}
	for i := range want {
		for col, w := range want[i] {
			if col != "AGE" && got[i][col] != w {
				t.Errorf("%s: row %d column %s = %q, the README shows %q", q.kubectl, i, col, got[i][col], w)
			}
		}
		for _, col := range []string{"ACCEPTED", "REFS", "ADDRESSES", "PROGRAMMED"} {
			if got[i][col] != "True" {
				t.Errorf("%s: %s of %s is %q, want True", q.kubectl, col, got[i]["NAME"], got[i][col])
			}
		}
	}
}

// namespaceCreated is the creation time of the demo namespace, asked with the
// kubeconfig the README names.
func namespaceCreated(t *testing.T, dir string) string {
	t.Helper()
	ts := shell(t, dir, "kubectl --kubeconfig tmp/local/kubeconfig get namespace demo -o jsonpath={.metadata.creationTimestamp}")
	if ts == "" {
		t.Fatal("namespace demo has no creation time")
	}
	return ts
}

// checkRunning: while it runs, the process scan sees etcd, the API server and Envoy,
// so its emptiness after the stop means something.
func checkRunning(t *testing.T, dataDir, envoy string) {
	t.Helper()
	ps, err := processesNaming(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	names := programs(ps)
	for _, want := range []string{"etcd", "kube-apiserver", filepath.Base(envoy)} {
		if !names[want] {
			t.Errorf("no running %s names the data directory; running: %v", want, ps)
		}
	}
}

// checkNothingLeft: after the stop no process names the data directory, its ports are
// free, and it said so.
func checkNothingLeft(t *testing.T, dataDir string, r *localRun) {
	t.Helper()
	ps, err := processesNaming(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) > 0 {
		t.Errorf("still running after the stop: %v", ps)
	}
	requirePortsFree(t)
	if !strings.Contains(r.Stdout(), "stopped: etcd, kube-apiserver, the manager and every Envoy") {
		t.Errorf("portcullis local did not report the stop:\n%s", r.Stdout())
	}
}
