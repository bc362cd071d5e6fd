// Package xdstest runs a real Envoy in tests: it starts Envoy from a bootstrap on a free
// loopback admin port, waits for it, reads its admin interface, and stops it when the
// test ends. Envoy's log goes to a file that is printed when the test fails.
package xdstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// Timeout bounds every wait of this package.
const Timeout = 20 * time.Second

// Config says how to start Envoy.
type Config struct {
	// Bootstrap returns the bootstrap YAML for the admin port Start picked; the admin
	// interface must listen on 127.0.0.1 at that port.
	Bootstrap func(adminPort uint32) ([]byte, error)
	// LogLevel is Envoy's --log-level; "warn" when empty.
	LogLevel string
	// Args are extra command-line arguments.
	Args []string
}

// Envoy is a running Envoy process.
type Envoy struct {
	t         testing.TB
	AdminPort uint32
	// LogPath is the file holding Envoy's stdout and stderr.
	LogPath string

	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// Start starts Envoy and returns once its admin interface answers. Envoy is stopped when
// the test ends; its log is printed if the test failed.
func Start(t testing.TB, cfg Config) *Envoy {
	t.Helper()
	bin := testenv.EnvoyBinary(t)
	dir := t.TempDir()
	adminPort := FreePort(t)
	yaml, err := cfg.Bootstrap(adminPort)
	if err != nil {
		t.Fatalf("build the Envoy bootstrap: %v", err)
	}
	bootstrapPath := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(bootstrapPath, yaml, 0o600); err != nil {
		t.Fatal(err)
	}
	logLevel := cfg.LogLevel
	if logLevel == "" {
		logLevel = "warn"
	}
	e := &Envoy{t: t, AdminPort: adminPort, LogPath: filepath.Join(dir, "envoy.log"), exited: make(chan struct{})}
	logFile, err := os.Create(e.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"-c", bootstrapPath,
		"--base-id", strconv.FormatUint(uint64(uniqueBaseID()), 10),
		"--log-level", logLevel,
		"--concurrency", "1",
	}, append(bootstrap.LogArgs(), cfg.Args...)...)
	e.cmd = exec.Command(bin, args...)
	e.cmd.Stdout, e.cmd.Stderr = logFile, logFile
	if err := e.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start Envoy: %v", err)
	}
	go func() {
		e.waitErr = e.cmd.Wait()
		logFile.Close()
		close(e.exited)
	}()
	t.Cleanup(func() {
		e.Stop()
		if t.Failed() {
			t.Logf("Envoy log (%s):\n%s", e.LogPath, e.Log())
		}
	})
	e.waitAdmin()
	return e
}

// AdminURL is the base URL of the admin interface.
func (e *Envoy) AdminURL() string { return fmt.Sprintf("http://127.0.0.1:%d", e.AdminPort) }

// WaitReady waits until the admin interface's /ready says LIVE, which Envoy reaches once
// its first listeners and clusters arrived (or their initial fetch timed out).
func (e *Envoy) WaitReady() {
	e.t.Helper()
	WaitFor(e.t, Timeout, "Envoy to be ready", func() error {
		if err := e.exitedErr(); err != nil {
			return Permanent(err)
		}
		code, body, err := e.get("/ready")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("/ready answered %d %q", code, body)
		}
		return nil
	})
}

// ConfigDump returns /config_dump?include_eds (JSON).
func (e *Envoy) ConfigDump() []byte {
	e.t.Helper()
	code, body, err := e.get("/config_dump?include_eds")
	if err != nil || code != http.StatusOK {
		e.t.Fatalf("config_dump: %d %v", code, err)
	}
	return body
}

// Stop terminates Envoy (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. It
// may be called more than once.
func (e *Envoy) Stop() {
	e.stopOnce.Do(func() {
		select {
		case <-e.exited:
			return
		default:
		}
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.exited:
		case <-time.After(5 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.exited
		}
	})
}

// Log returns what Envoy logged so far.
func (e *Envoy) Log() string {
	b, err := os.ReadFile(e.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read the log: %v)", err)
	}
	return string(b)
}

func (e *Envoy) waitAdmin() {
	e.t.Helper()
	WaitFor(e.t, Timeout, "Envoy's admin interface", func() error {
		if err := e.exitedErr(); err != nil {
			return Permanent(err)
		}
		_, _, err := e.get("/ready")
		return err
	})
}

func (e *Envoy) exitedErr() error {
	select {
	case <-e.exited:
		return fmt.Errorf("Envoy exited: %v", e.waitErr)
	default:
		return nil
	}
}

func (e *Envoy) get(path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.AdminURL()+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// Validate runs `envoy --mode validate` on a bootstrap and returns an error holding
// Envoy's output when Envoy refuses it.
func Validate(t testing.TB, bootstrapYAML []byte) error {
	t.Helper()
	bin := testenv.EnvoyBinary(t)
	path := filepath.Join(t.TempDir(), "bootstrap.yaml")
	if err := os.WriteFile(path, bootstrapYAML, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--mode", "validate", "-c", path,
		"--base-id", strconv.FormatUint(uint64(uniqueBaseID()), 10), "--log-level", "warn").CombinedOutput()
	if err != nil {
		return fmt.Errorf("envoy --mode validate: %v\n%s", err, out)
	}
	return nil
}

// FreePort returns a TCP port that was free on every address a moment ago, chosen
// below the kernel's ephemeral range and outside the ports Envoy pods reserve. A port the kernel hands out for ":0" is one it
// also hands out as the local port of outgoing connections, and a test's Envoy that
// bound it a moment later failed now and then with "Address already in use" when a
// connection of another test process had taken it meanwhile (seen in CI).
func FreePort(t testing.TB) uint32 {
	t.Helper()
	low := ephemeralLow()
	for range 200 {
		port := freePortFloor + rand.IntN(low-freePortFloor)
		if reservedPort(port) || !handOut(port) {
			continue
		}
		if l, err := net.Listen("tcp", fmt.Sprintf(":%d", port)); err == nil {
			l.Close()
			return uint32(port)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint32(l.Addr().(*net.TCPAddr).Port)
}

// handedOut are the ports FreePort gave this process. A random pick can repeat: a test
// that asked for its admin, metrics and listener ports before binding any was given
// the same port twice once (TestRouteTimeoutsCutASlowBackend, 2026-11-29: "metrics port
// 29975 is also the admin or the readiness port"), so a port is handed out once.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// handOut marks port handed out, false when it was already.
func handOut(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports[port] {
		return false
	}
	handedOut.ports[port] = true
	return true
}

// reservedPort tells whether port is one a test must not be handed: the ports every
// Envoy pod binds besides its listeners, where the translator refuses a Gateway
// listener (TestTunnelDNSRebinding got 19000 once, and its Gateway refused it), and the
// demo API's fixed port, which the README's quickstart names (TestQuickstartAsWritten
// once handed it to etcd, and `portcullis local --demo` found it taken).
func reservedPort(port int) bool {
	switch port {
	case bootstrap.PodAdminPort, bootstrap.PodReadinessPort, bootstrap.PodMetricsPort, demoAPIPort:
		return true
	}
	return false
}

// demoAPIPort is internal/localenv/demo.APIPort, which this package cannot import
// (localenv's tests import it); TestFreePortSkipsPortsTestsMustNotGet checks they agree.
const demoAPIPort = 19443

// freePortFloor is the lowest port FreePort picks: above the well-known services a
// machine may run.
const freePortFloor = 15000

// ephemeralLow is the start of the kernel's ephemeral port range (Linux's default,
// 32768, when it cannot be read), never more than 30000: the ports from 30000 up are a
// cluster's NodePorts in the real-cluster tests.
func ephemeralLow() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > freePortFloor+1000 {
				low = n
			}
		}
	}
	return min(low, 30000)
}

var baseIDs atomic.Uint32

// uniqueBaseID keeps Envoys of concurrently running test processes from sharing hot
// restart state: the process ID spreads processes apart, a counter spreads the Envoys
// of one process.
func uniqueBaseID() uint32 {
	return uint32(os.Getpid()%200000)*20 + baseIDs.Add(1)%20
}

type permanentError struct{ error }

// Permanent marks an error that ends WaitFor at once.
func Permanent(err error) error { return permanentError{err} }

// WaitFor polls cond every 50 ms until it returns nil, failing the test with the last
// error after timeout or as soon as cond returns a Permanent error.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		var permanent permanentError
		if errors.As(err, &permanent) {
			t.Fatalf("waiting for %s: %v", what, permanent.error)
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up after %s: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LocalBootstrap returns a Config.Bootstrap for an Envoy of gateway that reaches a
// plaintext xDS server on 127.0.0.1:xdsPort.
func LocalBootstrap(gateway, nodeID string, xdsPort uint32) func(adminPort uint32) ([]byte, error) {
	return func(adminPort uint32) ([]byte, error) {
		return bootstrap.YAML(bootstrap.Options{
			Gateway:    gateway,
			NodeID:     nodeID,
			XDSAddress: "127.0.0.1",
			XDSPort:    xdsPort,
			AdminPort:  adminPort,
		})
	}
}
