//go:build linux

package operator

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// stopTimeout is how long the manager may take to stop its Envoys and exit after
// SIGTERM (the host provider gives each Envoy 5 s before killing it).
const stopTimeout = 30 * time.Second

// manager is a running `portcullis manager --provider host` process.
type manager struct {
	t       *testing.T
	cmd     *exec.Cmd
	logPath string
	// workDir is the host provider's --work-dir: one <namespace>_<gateway> directory
	// per Gateway with its bootstrap and Envoy log.
	workDir   string
	probePort uint32

	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// startManager runs the manager binary with the host provider, its DNS guard asking
// only dnsServer and allowing loopback answers, and waits until /readyz answers. The
// manager is stopped with SIGTERM when the test ends, and the test fails if any of its
// Envoys outlives it.
func startManager(t *testing.T, dnsServer string) *manager {
	t.Helper()
	bin := portcullisBinary(t)
	dir := t.TempDir()
	m := &manager{t: t, logPath: filepath.Join(dir, "manager.log"), workDir: filepath.Join(dir, "envoys"),
		probePort: xdstest.FreePort(t), exited: make(chan struct{})}
	logFile, err := os.Create(m.logPath)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(bin, m.args(t, dnsServer)...)
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigPath(t))
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	// Should the test binary die, the manager gets SIGTERM and stops its Envoys.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := m.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		m.waitErr = m.cmd.Wait()
		logFile.Close()
		close(m.exited)
	}()
	t.Cleanup(m.cleanup)
	m.waitReady()
	return m
}

// args are the manager's flags. The config comes from $KUBECONFIG: the manager parses
// its own flag set, which has no --kubeconfig.
func (m *manager) args(t *testing.T, dnsServer string) []string {
	return []string{"manager",
		"--provider", "host",
		"--envoy-binary", testenv.EnvoyBinary(t),
		"--work-dir", m.workDir,
		"--xds-port", strconv.Itoa(int(xdstest.FreePort(t))),
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(int(m.probePort)),
		"--dns-server", dnsServer,
		"--dns-ip-family", "ipv4",
		"--allow-cidr", "127.0.0.0/8",
		// kubectl's user calls through Envoy from this machine, as in local mode.
		"--unrestricted-callers", "127.0.0.1/32",
		"--zap-log-level", "debug",
		"--zap-time-encoding", "rfc3339nano",
	}
}

// waitReady waits for the health probe's /readyz, failing at once if the manager exits.
func (m *manager) waitReady() {
	m.t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", m.probePort)
	client := &http.Client{Timeout: 2 * time.Second}
	xdstest.WaitFor(m.t, 60*time.Second, "the manager's /readyz", func() error {
		if m.hasExited() {
			return xdstest.Permanent(fmt.Errorf("the manager exited: %v\n%s", m.waitErr, tail(m.log(), 60)))
		}
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %d", resp.StatusCode)
		}
		return nil
	})
}

// signal sends sig and waits for the manager to exit; it returns the exit error (nil for
// a clean exit) or an error if the manager outlived stopTimeout, when it is killed. Only
// the first call signals.
func (m *manager) signal(sig syscall.Signal) error {
	var err error
	m.stopOnce.Do(func() {
		if m.hasExited() {
			err = fmt.Errorf("the manager had exited on its own: %v", m.waitErr)
			return
		}
		_ = m.cmd.Process.Signal(sig)
		select {
		case <-m.exited:
			err = m.waitErr
		case <-time.After(stopTimeout):
			_ = m.cmd.Process.Kill()
			<-m.exited
			err = fmt.Errorf("the manager did not exit within %s of %v", stopTimeout, sig)
		}
	})
	return err
}

// cleanup stops the manager with SIGTERM, checks it exited cleanly and left no Envoy
// running, and prints its log and its Envoys' logs if the test failed.
func (m *manager) cleanup() {
	alreadyStopped := m.hasExited()
	if err := m.signal(syscall.SIGTERM); err != nil && !alreadyStopped {
		m.t.Errorf("stopping the manager with SIGTERM: %v", err)
	}
	if err := waitNoEnvoys(m.workDir, 10*time.Second); err != nil {
		m.t.Error(err)
	}
	if m.t.Failed() {
		m.t.Logf("manager log (%s):\n%s", m.logPath, headTail(m.log(), 100, 100))
		m.t.Logf("Envoy logs:\n%s", headTail(m.envoyLogs(), 60, 60))
	}
}

func (m *manager) hasExited() bool {
	select {
	case <-m.exited:
		return true
	default:
		return false
	}
}

// log returns everything the manager logged so far.
func (m *manager) log() string {
	b, err := os.ReadFile(m.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", m.logPath, err)
	}
	return string(b)
}

// envoyLogs returns the envoy.log of every Gateway directory in the work directory,
// without the list of compiled-in extensions Envoy prints at start.
func (m *manager) envoyLogs() string {
	paths, _ := filepath.Glob(filepath.Join(m.workDir, "*", "envoy.log"))
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintf(&b, "--- %s: %v\n", p, err)
			continue
		}
		fmt.Fprintf(&b, "--- %s\n", p)
		for line := range strings.Lines(string(data)) {
			if !strings.Contains(line, "statically linked extensions") && !strings.Contains(line, "]   ") {
				b.WriteString(line)
			}
		}
	}
	return b.String()
}

// tail returns the last n lines of text.
func tail(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// headTail returns the first and last lines of text, saying how many it left out: how
// a failure started matters as much as where it ended.
func headTail(text string, head, last int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) <= head+last {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:head], "\n") + fmt.Sprintf("\n[... %d lines left out ...]\n", len(lines)-head-last) + strings.Join(lines[len(lines)-last:], "\n")
}

// gatewayDir is the host provider's directory of one Gateway.
func (m *manager) gatewayDir(namespace, name string) string {
	return filepath.Join(m.workDir, namespace+"_"+name)
}
