package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func parseLocal(t *testing.T, args ...string) *localFlags {
	t.Helper()
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	f := registerLocalFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLocalPassesManagerFlagsOn(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(*localFlags) bool
	}{
		{name: "by default Envoy runs on this machine and the manager listens on loopback", args: nil, check: func(f *localFlags) bool {
			m := f.manager
			return m.provider == "host" && m.metricsAddr == "127.0.0.1:16480" && m.probeAddr == "127.0.0.1:16481" &&
				m.namespace == "portcullis-system" && m.xdsPort == 18000 && f.apiServerPort == 16443 && !f.demo && !f.reset
		}},
		{name: "manager flags reach the manager", args: []string{"--xds-port", "19000", "--leader-elect", "--envoy-binary", "/x/envoy", "--work-dir", "/w", "--metrics-bind-address", "0"}, check: func(f *localFlags) bool {
			m := f.manager
			return m.xdsPort == 19000 && m.leaderElect && m.envoyBinary == "/x/envoy" && m.workDir == "/w" && m.metricsAddr == "0"
		}},
		{name: "DNS guard flags reach the guard", args: []string{"--allow-cidr", "10.1.0.0/16", "--dns-server", "192.0.2.53", "--cluster-cidr", "10.96.0.0/12", "--dns-stale-grace", "1m"}, check: func(f *localFlags) bool {
			g := f.manager.guard
			return slices.Equal(g.AllowCIDRs, []string{"10.1.0.0/16"}) && slices.Equal(g.DNSServers, []string{"192.0.2.53"}) &&
				slices.Equal(g.ClusterCIDRs, []string{"10.96.0.0/12"}) && g.StaleGrace.String() == "1m0s"
		}},
		{name: "local's own flags", args: []string{"--demo", "--reset", "--data-dir", "d", "--assets-dir", "a", "--apiserver-port", "1", "--etcd-port", "2", "--etcd-peer-port", "3"}, check: func(f *localFlags) bool {
			return f.demo && f.reset && f.dataDir == "d" && f.assetsDir == "a" && f.apiServerPort == 1 && f.etcdPort == 2 && f.etcdPeerPort == 3
		}},
		{name: "the manager's log flags are accepted", args: []string{"--zap-log-level", "debug"}, check: func(f *localFlags) bool { return f.zap.Level != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f := parseLocal(t, tt.args...); !tt.check(f) {
				t.Fatalf("flags %q parsed into %+v (manager %+v)", tt.args, f, *f.manager)
			}
		})
	}
}

func TestLocalHelpShowsTheLocalDefaults(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"local", "-h"}, &bytes.Buffer{}, &stderr); code != 2 {
		t.Fatalf("exit code %d for -h", code)
	}
	for _, want := range []string{"-provider string", `(default "host")`, "-allow-cidr", "-data-dir", "-demo", "-reset"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("local -h does not show %q:\n%s", want, stderr.String())
		}
	}
}

// TestLocalHelpStatesEachDefaultOnce: a manager flag whose default local mode changes
// shows the local default only, not also the manager's default in words.
func TestLocalHelpStatesEachDefaultOnce(t *testing.T) {
	var stderr bytes.Buffer
	run([]string{"local", "-h"}, &bytes.Buffer{}, &stderr)
	help := stderr.String()
	for name, value := range localManagerDefaults {
		t.Run(name, func(t *testing.T) {
			entry := flagHelp(help, name)
			if entry == "" {
				t.Fatalf("local -h has no --%s:\n%s", name, help)
			}
			if n := strings.Count(entry, "default"); n != 1 {
				t.Errorf("--%s states %d defaults, want 1:\n%s", name, n, entry)
			}
			if !strings.Contains(entry, fmt.Sprintf("(default %q)", value)) {
				t.Errorf("--%s does not show the local default %q:\n%s", name, value, entry)
			}
		})
	}
}

// flagHelp is one flag's entry of a flag.FlagSet's -h: its line and the indented help.
func flagHelp(help, name string) string {
	lines := strings.Split(help, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  -"+name+" ") || l == "  -"+name {
			entry := l
			for _, next := range lines[i+1:] {
				if !strings.HasPrefix(next, "    ") {
					break
				}
				entry += "\n" + next
			}
			return entry
		}
	}
	return ""
}

func TestLocalRefusesBadInputWithAClearMessage(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{name: "the kubernetes provider", args: []string{"--provider", "kubernetes"}, wantCode: 2, want: `--provider "kubernetes": portcullis local runs Envoy on this machine; only host is possible`},
		{name: "a port out of range", args: []string{"--apiserver-port", "0"}, wantCode: 2, want: "--apiserver-port 0: want 1-65535"},
		{name: "an invalid DNS guard CIDR", args: []string{"--allow-cidr", "10.0.0.0/33"}, wantCode: 2, want: "--allow-cidr"},
		{name: "a stray argument", args: []string{"demo"}, wantCode: 2, want: `unexpected argument "demo"`},
		{name: "a non-positive start timeout", args: []string{"--start-timeout", "0s"}, wantCode: 2, want: "--start-timeout 0s"},
		{name: "missing control plane binaries name make tools", args: []string{"--assets-dir", empty, "--data-dir", t.TempDir()}, wantCode: 1,
			want: "portcullis local: etcd not found in " + empty + ": run 'make tools' (or pass --assets-dir DIR)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"local"}, tt.args...), &stdout, &stderr); code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("stderr %q does not contain %q", stderr.String(), tt.want)
			}
		})
	}
}

// fakeBinDir makes a bin/ like `make tools` leaves: k8s/etcd, k8s/kube-apiserver and
// (optionally) envoy-<version>, as executable stubs.
func fakeBinDir(t *testing.T, withEnvoy bool) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bin")
	names := []string{"k8s/etcd", "k8s/kube-apiserver", "portcullis"}
	if withEnvoy {
		names = append(names, "envoy-"+EnvoyVersion)
	}
	for _, name := range names {
		p := filepath.Join(bin, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func TestLocalFindsItsBinariesBesideItself(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	bin := fakeBinDir(t, true)
	f := parseLocal(t)
	if err := f.resolve(filepath.Join(bin, "portcullis")); err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(bin)
	if f.dataDir != filepath.Join(root, "tmp", "local") || f.assetsDir != filepath.Join(bin, "k8s") ||
		f.manager.envoyBinary != filepath.Join(bin, "envoy-"+EnvoyVersion) || f.manager.workDir != filepath.Join(root, "tmp", "local", "envoy") {
		t.Fatalf("resolved data %s, assets %s, envoy %s, work %s", f.dataDir, f.assetsDir, f.manager.envoyBinary, f.manager.workDir)
	}
}

func TestLocalWithoutEnvoyNamesMakeTools(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("PATH", t.TempDir())
	bin := fakeBinDir(t, false)
	f := parseLocal(t)
	err := f.resolve(filepath.Join(bin, "portcullis"))
	if err == nil || !strings.Contains(err.Error(), "run 'make tools' (or pass --envoy-binary PATH)") {
		t.Fatalf("error %v, want one naming make tools and --envoy-binary", err)
	}
}

func TestDefaultDataDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	t.Setenv("HOME", "/home/u")
	tests := []struct {
		name, binDir, want string
	}{
		{name: "a checkout's bin/ keeps data in its git-ignored tmp/", binDir: "/src/portcullis/bin", want: "/src/portcullis/tmp/local"},
		{name: "elsewhere the user cache directory", binDir: "/usr/local/libexec", want: "/cache/portcullis/local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultDataDir(tt.binDir); got != tt.want {
				t.Fatalf("defaultDataDir(%s) = %s, want %s", tt.binDir, got, tt.want)
			}
		})
	}
}

func TestGatewayLine(t *testing.T) {
	gw := func(addrs []string, listeners ...gwapiv1.Listener) *gwapiv1.Gateway {
		g := &gwapiv1.Gateway{}
		g.Namespace, g.Name = "demo", "demo"
		g.Spec.Listeners = listeners
		for _, a := range addrs {
			g.Status.Addresses = append(g.Status.Addresses, gwapiv1.GatewayStatusAddress{Value: a})
		}
		return g
	}
	http80 := gwapiv1.Listener{Name: "http", Port: 80, Protocol: gwapiv1.HTTPProtocolType}
	https8443 := gwapiv1.Listener{Name: "tls", Port: 8443, Protocol: gwapiv1.HTTPSProtocolType}
	tests := []struct {
		name   string
		gw     *gwapiv1.Gateway
		admin  string
		want   string
		wantOK bool
	}{
		{name: "no address yet prints nothing", gw: gw(nil, http80), admin: "127.0.0.1:41000"},
		{name: "a port below 1024 is shown where Envoy binds it", gw: gw([]string{"127.0.0.1"}, http80), wantOK: true,
			want: "gateway demo/demo: address 127.0.0.1; listener http (HTTP, port 80) at http://127.0.0.1:10080"},
		{name: "an HTTPS listener keeps its port", gw: gw([]string{"127.0.0.1"}, https8443), wantOK: true,
			want: "gateway demo/demo: address 127.0.0.1; listener tls (HTTPS, port 8443) at https://127.0.0.1:8443"},
		{name: "every address and listener", gw: gw([]string{"127.0.0.1", "::1"}, http80, https8443), wantOK: true,
			want: "gateway demo/demo: address 127.0.0.1, ::1; listener http (HTTP, port 80) at http://127.0.0.1:10080; listener tls (HTTPS, port 8443) at https://127.0.0.1:8443"},
		{name: "the Envoy admin address once the provider wrote it", gw: gw([]string{"127.0.0.1"}, http80), admin: "127.0.0.1:41000", wantOK: true,
			want: "gateway demo/demo: address 127.0.0.1; listener http (HTTP, port 80) at http://127.0.0.1:10080; Envoy admin http://127.0.0.1:41000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := gatewayLine(tt.gw, tt.admin)
			if ok != tt.wantOK || got != tt.want {
				t.Fatalf("gatewayLine = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestReadyText(t *testing.T) {
	tests := []struct {
		name     string
		demo     bool
		want     []string
		dontWant []string
	}{
		{name: "the demo tells the curl line", demo: true, want: []string{"\nReady. In another terminal:\n", "  export KUBECONFIG=/d/kubeconfig\n",
			"  curl -s -H 'Host: api.demo.portcullis.test' http://127.0.0.1:10080/hello\n", "Ctrl-C here stops everything."}},
		{name: "without the demo, apply the samples", demo: false, want: []string{"  export KUBECONFIG=/d/kubeconfig\n", "  kubectl apply -f samples/\n", "address is printed here"},
			dontWant: []string{"curl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readyText("/d/kubeconfig", tt.demo)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("ready text lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.dontWant {
				if strings.Contains(got, w) {
					t.Errorf("ready text has %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestDemoGuardException(t *testing.T) {
	servers, allow := []string{"192.0.2.53"}, []string{"10.1.0.0/16"}
	applyDemoGuard(&servers, &allow, "127.0.0.1:5353")
	if !slices.Equal(servers, []string{"127.0.0.1:5353"}) || !slices.Equal(allow, []string{"10.1.0.0/16", "127.0.0.0/8"}) {
		t.Fatalf("servers %v, allow %v: want only the demo DNS server, and the operator's exceptions plus 127.0.0.0/8", servers, allow)
	}
	if w := demoWarning(); !strings.Contains(w, "DEMO ONLY") || !strings.Contains(w, "--allow-cidr 127.0.0.0/8") {
		t.Fatalf("the warning does not name the exception:\n%s", w)
	}
}
