package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

func TestManagerRefusesBadFlagsWithAClearMessage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "an unknown provider", args: []string{"--provider", "docker", "--namespace", "x"}, want: `--provider "docker": use kubernetes or host`},
		{name: "the kubernetes provider without a namespace", args: []string{"--provider", "kubernetes", "--namespace", ""}, want: "--namespace is required with --provider kubernetes"},
		{name: "an xDS port out of range", args: []string{"--provider", "host", "--xds-port", "70000"}, want: "--xds-port 70000: want 1-65535"},
		{name: "a host listen address that is not an IP", args: []string{"--provider", "host", "--host-listen-address", "localhost"}, want: `--host-listen-address "localhost": want an IP address`},
		{name: "an invalid DNS guard CIDR", args: []string{"--provider", "host", "--allow-cidr", "10.0.0.0/33"}, want: "--allow-cidr"},
		{name: "an Envoy CPU request that is no quantity", args: []string{"--namespace", "x", "--envoy-cpu-request", "lots"}, want: `--envoy-cpu-request "lots": not a Kubernetes quantity`},
		{name: "an xDS certificate that would expire between checks", args: []string{"--namespace", "x", "--xds-cert-lifetime", "1m", "--xds-cert-check-interval", "30s"}, want: "--xds-cert-lifetime 1m0s: want at least three --xds-cert-check-interval"},
		{name: "an xDS CA shorter than a certificate and its propagation", args: []string{"--namespace", "x", "--xds-ca-lifetime", "2h", "--xds-cert-lifetime", "90m", "--xds-ca-propagation", "1h"}, want: "--xds-ca-lifetime 2h0m0s: want at least --xds-cert-lifetime plus --xds-ca-propagation"},
		{name: "an xDS check interval of zero", args: []string{"--namespace", "x", "--xds-cert-check-interval", "0s"}, want: "--xds-cert-check-interval 0s: want a positive duration"},
		{name: "an Envoy memory request that is no quantity", args: []string{"--namespace", "x", "--envoy-memory-request", "1 GB"}, want: `--envoy-memory-request "1 GB": not a Kubernetes quantity`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", "")
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"manager"}, tt.args...), &stdout, &stderr); code != 2 {
				t.Fatalf("exit code %d, want 2; stderr: %s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("stderr %q does not contain %q", stderr.String(), tt.want)
			}
		})
	}
}

// TestManagerStartsInHostMode starts the real manager (host provider, loopback xDS)
// against the real API server and waits for its readiness endpoint.
func TestManagerStartsInHostMode(t *testing.T) {
	t.Setenv("KUBECONFIG", startAPIServer(t))
	probe := xdstest.FreePort(t)
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f := registerManagerFlags(fs)
	if err := fs.Parse([]string{"--provider", "host", "--envoy-binary", testenv.EnvoyBinary(t), "--work-dir", t.TempDir(),
		"--metrics-bind-address", "0", "--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probe),
		"--xds-port", fmt.Sprint(xdstest.FreePort(t)), "--dns-server", "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- startManager(ctx, f, logr.Discard()) }()
	xdstest.WaitFor(t, 30*time.Second, "the manager's /readyz", func() error {
		select {
		case err := <-done:
			return xdstest.Permanent(fmt.Errorf("the manager stopped: %v", err))
		default:
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probe))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the manager stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the manager did not stop within 30s of its context ending")
	}
}

// TestEnvoyOptions: the host provider's Envoys bind the host listen address (loopback
// by default); in a cluster the listeners keep the default, every interface of the pod.
func TestEnvoyOptions(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "host provider binds loopback by default", args: []string{"--provider", "host"}, want: "127.0.0.1"},
		{name: "host provider binds the address given", args: []string{"--provider", "host", "--host-listen-address", "192.0.2.10"}, want: "192.0.2.10"},
		{name: "kubernetes provider binds every interface", args: []string{"--provider", "kubernetes", "--namespace", "x", "--host-listen-address", "192.0.2.10"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := parseManagerFlags(t, tt.args...)
			if got := envoyOptions(f).ListenAddress; got != tt.want {
				t.Fatalf("ListenAddress %q, want %q", got, tt.want)
			}
		})
	}
}

// parseManagerFlags parses manager flags as the command line would.
func parseManagerFlags(t *testing.T, args ...string) *managerFlags {
	t.Helper()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f := registerManagerFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMetricsOptions: metrics are served with authentication over HTTPS in a cluster;
// on a host they are plain HTTP, so by default only loopback reaches them.
func TestMetricsOptions(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantAddr   string
		wantSecure bool
	}{
		{name: "kubernetes default", args: []string{"--provider", "kubernetes", "--namespace", "x"}, wantAddr: ":8443", wantSecure: true},
		{name: "host default is loopback", args: []string{"--provider", "host"}, wantAddr: "127.0.0.1:8443"},
		{name: "host with an address given", args: []string{"--provider", "host", "--metrics-bind-address", ":9090"}, wantAddr: ":9090"},
		{name: "host with metrics off", args: []string{"--provider", "host", "--metrics-bind-address", "0"}, wantAddr: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := parseManagerFlags(t, tt.args...)
			got := metricsOptions(f)
			if got.BindAddress != tt.wantAddr || got.SecureServing != tt.wantSecure {
				t.Fatalf("BindAddress %q SecureServing %v, want %q %v", got.BindAddress, got.SecureServing, tt.wantAddr, tt.wantSecure)
			}
		})
	}
}

// TestHostDefaults: with no --envoy-binary the host provider takes the Envoy beside the
// binary or on PATH (and says to run 'make tools' when there is none); with no
// --work-dir it makes a temporary directory.
func TestHostDefaults(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "envoy")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	envoy, workDir, err := hostDefaults(&managerFlags{})
	if err != nil || envoy != fake {
		t.Fatalf("hostDefaults() envoy = %q, %v; want %s from PATH", envoy, err, fake)
	}
	t.Cleanup(func() { _ = os.RemoveAll(workDir) })
	if info, err := os.Stat(workDir); err != nil || !info.IsDir() {
		t.Errorf("work directory %q: %v; want a fresh directory", workDir, err)
	}
	if envoy, workDir, _ := hostDefaults(&managerFlags{envoyBinary: "/x/envoy", workDir: "/x/work"}); envoy != "/x/envoy" || workDir != "/x/work" {
		t.Errorf("flags were not kept: %q %q", envoy, workDir)
	}
	t.Setenv("PATH", t.TempDir())
	if _, _, err := hostDefaults(&managerFlags{}); err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Errorf("hostDefaults() with no Envoy anywhere: %v; want an error saying to run make tools", err)
	}
}

// TestManagerTakesKubeconfig: --kubeconfig is a flag of the manager, and a bad path is
// reported as such (not as an unknown flag).
func TestManagerTakesKubeconfig(t *testing.T) {
	var out bytes.Buffer
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	code := run([]string{"manager", "--provider", "host", "--kubeconfig", missing, "--metrics-bind-address", "0",
		"--health-probe-bind-address", "0", "--dns-server", "127.0.0.1:1"}, &out, &out)
	if code != 1 || !strings.Contains(out.String(), "no-such-kubeconfig") {
		t.Errorf("exit %d, output:\n%s\nwant exit 1 naming the missing kubeconfig", code, out.String())
	}
}

// startAPIServer starts a test API server for one test (stopped when it ends) and
// returns an admin kubeconfig for it; a missing binary fails under CI=true.
func startAPIServer(t *testing.T) (kubeconfig string) {
	t.Helper()
	api, err := testenv.StartAPIServer()
	if err != nil {
		testenv.MissingBinary(t, "the test API server", "envtest-assets", err)
	}
	t.Cleanup(func() { _ = api.Stop() })
	kubeconfig, err = api.Kubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
