package infra

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// restartWithin bounds how long a killed Envoy may stay down.
const restartWithin = 5 * time.Second

func hostGateway(ns string) Gateway {
	return Gateway{Name: "egress", Namespace: ns, UID: types.UID("uid-" + ns), Listeners: []Listener{{Name: "http", Port: 80, EnvoyPort: 10080}}}
}

// alive tells whether a process with that ID exists.
func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	xdstest.WaitFor(t, 10*time.Second, fmt.Sprintf("process %d to be gone", pid), func() error {
		if alive(pid) {
			return errors.New("still running")
		}
		return nil
	})
}

// waitConnected waits until the xDS server sees the host Envoy of gateway and its
// admin interface says it is ready.
func waitConnected(t *testing.T, h *Host, server *xds.Server, gw Gateway) {
	t.Helper()
	xdstest.WaitFor(t, xdstest.Timeout, "the Envoy of "+gw.key()+" to connect and be ready", func() error {
		envs := server.Status(gw.key()).Envoys
		if len(envs) != 1 || envs[0].NodeID != "host/"+gw.key() {
			return fmt.Errorf("connected Envoys: %+v", envs)
		}
		url, ok := h.AdminURL(gw.Namespace, gw.Name)
		if !ok {
			return xdstest.Permanent(errors.New("no admin URL"))
		}
		code, err := probe(url + "/ready")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("admin /ready: %d %v", code, err)
		}
		return nil
	})
}

func TestHostProvider(t *testing.T) {
	ctx := context.Background()
	bin := testenv.EnvoyBinary(t)
	server := xds.New(testr.New(t))
	xdsPort := serveXDS(t, server, nil)
	logs := &testenv.LogBuffer{}
	workDir := t.TempDir()
	h, err := NewHost(HostOptions{
		EnvoyBinary: bin, XDSPort: xdsPort, WorkDir: workDir, Log: logs.Logger(),
		LogLevel: "warn", Concurrency: 1, RestartBackoff: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Whatever happens, no Envoy outlives the test.
	t.Cleanup(func() { _ = h.Close() })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("provider log:\n%s", strings.Join(logs.Lines(), "\n"))
		}
	})

	a, b := hostGateway("team-a"), hostGateway("team-b")
	for _, gw := range []Gateway{a, b} {
		if _, _, err := server.Publish(gw.key(), envoyconfig.Resources{}); err != nil {
			t.Fatal(err)
		}
	}

	var pidA int
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"Ensure starts an Envoy that connects to the xDS server and answers on its admin port", func(t *testing.T) {
			addrs, err := h.Ensure(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			if len(addrs) != 1 || *addrs[0].Type != gwapiv1.IPAddressType || addrs[0].Value != "127.0.0.1" {
				t.Errorf("addresses = %+v", addrs)
			}
			waitConnected(t, h, server, a)
			pidA = h.PID(a.Namespace, a.Name)
			if !alive(pidA) {
				t.Fatalf("PID %d is not running", pidA)
			}
			if _, err := os.Stat(filepath.Join(workDir, "team-a_egress", "bootstrap.yaml")); err != nil {
				t.Errorf("bootstrap file: %v", err)
			}
		}},
		{"its metrics listener is on loopback, written in the Gateway's directory, and serves only the stats", func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(workDir, "team-a_egress", MetricsAddressFile))
			if err != nil {
				t.Fatal(err)
			}
			addr := strings.TrimSpace(string(raw))
			url, ok := h.MetricsURL(a.Namespace, a.Name)
			if !strings.HasPrefix(addr, "127.0.0.1:") || !ok || url != "http://"+addr+MetricsPath {
				t.Fatalf("metrics-address file %q, MetricsURL %q", raw, url)
			}
			for path, want := range map[string]int{MetricsPath: http.StatusOK, "/config_dump": http.StatusNotFound} {
				if code, err := probe("http://" + addr + path); err != nil || code != want {
					t.Errorf("GET %s = %d, %v; want %d", path, code, err, want)
				}
			}
		}},
		{"its admin address is written in the Gateway's directory (HostDir) and serves the admin interface", func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(HostDir(workDir, a.Namespace, a.Name), AdminAddressFile))
			if err != nil {
				t.Fatal(err)
			}
			addr := strings.TrimSpace(string(raw))
			if url, ok := h.AdminURL(a.Namespace, a.Name); !ok || url != "http://"+addr {
				t.Fatalf("admin-address file %q, AdminURL %q", raw, url)
			}
			if code, err := probe("http://" + addr + "/ready"); err != nil || code != http.StatusOK {
				t.Errorf("GET %s/ready = %d, %v; want 200", addr, code, err)
			}
		}},
		{"Ensure again, even with other listeners, keeps the same process", func(t *testing.T) {
			changed := a
			changed.Listeners = append(slices.Clone(a.Listeners), Listener{Name: "alt", Port: 8080, EnvoyPort: 8080})
			for _, gw := range []Gateway{a, changed} {
				if _, err := h.Ensure(ctx, gw); err != nil {
					t.Fatal(err)
				}
				if got := h.PID(a.Namespace, a.Name); got != pidA {
					t.Fatalf("PID %d -> %d", pidA, got)
				}
			}
		}},
		{"a second Gateway gets its own Envoy and admin port", func(t *testing.T) {
			if _, err := h.Ensure(ctx, b); err != nil {
				t.Fatal(err)
			}
			waitConnected(t, h, server, b)
			urlA, _ := h.AdminURL(a.Namespace, a.Name)
			urlB, _ := h.AdminURL(b.Namespace, b.Name)
			if pidB := h.PID(b.Namespace, b.Name); pidB == pidA || !alive(pidB) || urlA == urlB {
				t.Fatalf("PIDs %d/%d, admin URLs %s %s", pidA, pidB, urlA, urlB)
			}
		}},
		{"a killed Envoy is restarted, the restart is logged, and it reconnects", func(t *testing.T) {
			if err := syscall.Kill(pidA, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			xdstest.WaitFor(t, restartWithin, "a new Envoy process", func() error {
				if pid := h.PID(a.Namespace, a.Name); pid == 0 || pid == pidA {
					return fmt.Errorf("PID %d", pid)
				}
				return nil
			})
			waitGone(t, pidA)
			pidA = h.PID(a.Namespace, a.Name)
			if !slices.ContainsFunc(logs.Lines(), func(l string) bool {
				return strings.Contains(l, "Envoy exited; restarting") && strings.Contains(l, "team-a/egress")
			}) {
				t.Errorf("no restart in the log:\n%s", strings.Join(logs.Lines(), "\n"))
			}
			waitConnected(t, h, server, a)
		}},
		{"Delete stops the Gateway's Envoy and removes its directory; the other runs on", func(t *testing.T) {
			if err := h.Delete(ctx, a.Namespace, a.Name); err != nil {
				t.Fatal(err)
			}
			waitGone(t, pidA)
			if _, ok := h.AdminURL(a.Namespace, a.Name); ok || h.PID(a.Namespace, a.Name) != 0 {
				t.Errorf("the deleted Gateway still has an Envoy")
			}
			if _, err := os.Stat(filepath.Join(workDir, "team-a_egress")); !os.IsNotExist(err) {
				t.Errorf("work directory after Delete: %v", err)
			}
			if !alive(h.PID(b.Namespace, b.Name)) {
				t.Errorf("the other Gateway's Envoy stopped")
			}
			if err := h.Delete(ctx, a.Namespace, a.Name); err != nil {
				t.Errorf("Delete again: %v", err)
			}
		}},
		{"Close stops every Envoy, removes their address files (the logs stay) and refuses new Gateways", func(t *testing.T) {
			pidB := h.PID(b.Namespace, b.Name)
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			waitGone(t, pidB)
			dirB := HostDir(workDir, b.Namespace, b.Name)
			for _, name := range []string{AdminAddressFile, MetricsAddressFile} {
				if _, err := os.Stat(filepath.Join(dirB, name)); !os.IsNotExist(err) {
					t.Errorf("%s after Close: %v, want it removed", name, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dirB, "envoy.log")); err != nil {
				t.Errorf("envoy.log after Close: %v", err)
			}
			if _, err := h.Ensure(ctx, a); err == nil {
				t.Errorf("Ensure after Close succeeded")
			}
			if !slices.ContainsFunc(logs.Lines(), func(l string) bool { return strings.Contains(l, "Envoy stopped") }) {
				t.Errorf("no stop in the log")
			}
		}},
	}
	for _, step := range steps {
		if !t.Run(step.name, step.run) {
			return
		}
	}
}

// TestHostForgetsAddressesOfAKilledRun: a provider killed before it stopped its Envoys
// left their address files; the next provider on the work directory removes them before
// any Envoy of its own runs, so nothing prints the dead Envoy's admin address.
func TestHostForgetsAddressesOfAKilledRun(t *testing.T) {
	workDir := t.TempDir()
	dir := HostDir(workDir, "demo", "demo")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	keep := []string{"envoy.log", "bootstrap.yaml"}
	for _, name := range append([]string{AdminAddressFile, MetricsAddressFile}, keep...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("127.0.0.1:35979\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewHost(HostOptions{EnvoyBinary: "envoy", XDSPort: 1, WorkDir: workDir}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{AdminAddressFile, MetricsAddressFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s of the killed run: %v, want it removed", name, err)
		}
	}
	for _, name := range keep {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v, want it kept", name, err)
		}
	}
}

func TestHostAdminPortBase(t *testing.T) {
	ctx := context.Background()
	bin := testenv.EnvoyBinary(t)
	server := xds.New(testr.New(t))
	xdsPort := serveXDS(t, server, nil)
	base := xdstest.FreePort(t)
	h, err := NewHost(HostOptions{
		EnvoyBinary: bin, XDSPort: xdsPort, WorkDir: t.TempDir(), Log: testr.New(t),
		LogLevel: "warn", Concurrency: 1, AdminPortBase: base,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	var urls []string
	for _, ns := range []string{"one", "two"} {
		if _, err := h.Ensure(ctx, hostGateway(ns)); err != nil {
			t.Fatal(err)
		}
		admin, _ := h.AdminURL(ns, "egress")
		metrics, _ := h.MetricsURL(ns, "egress")
		urls = append(urls, admin, strings.TrimSuffix(metrics, MetricsPath))
	}
	if urls[0] != fmt.Sprintf("http://127.0.0.1:%d", base) || len(slices.Compact(slices.Sorted(slices.Values(urls)))) != len(urls) {
		t.Fatalf("admin and metrics URLs = %v, want the first admin at port %d and four distinct ports", urls, base)
	}
}
