package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/controllers/infra"
)

// TestHostHeldPorts: with the host provider every port the manager and the local
// control plane hold is kept from Gateway listeners, named by its holder; in a cluster
// none is.
func TestHostHeldPorts(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		local bool
		want  map[uint32]string // port -> a word of its holder's description
	}{
		{name: "portcullis local: the control plane's and the manager's ports", local: true,
			want: map[uint32]string{16443: "kube-apiserver", 12379: "--etcd-port", 12380: "--etcd-peer-port", 18000: "xDS", 16480: "metrics", 16481: "health"}},
		{name: "portcullis local --demo: the demo API's port too", local: true, args: []string{"--demo"},
			want: map[uint32]string{16443: "kube-apiserver", 12379: "etcd", 12380: "etcd", 18000: "xDS", 16480: "metrics", 16481: "health", 19443: "demo API"}},
		{name: "moved ports are held where they moved, and a metrics endpoint turned off holds none", local: true,
			args: []string{"--apiserver-port", "7443", "--xds-port", "7000", "--metrics-bind-address", "0", "--health-probe-bind-address", "127.0.0.1:7081"},
			want: map[uint32]string{7443: "kube-apiserver", 12379: "etcd", 12380: "etcd", 7000: "xDS", 7081: "health"}},
		{name: "the manager with the host provider: its own ports, metrics on 127.0.0.1:8443 by default",
			args: []string{"--provider", "host"}, want: map[uint32]string{18000: "xDS", 8443: "metrics", 8081: "health"}},
		{name: "in a cluster Envoy has its pod's ports to itself", args: []string{"--provider", "kubernetes"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkPorts(t, hostHeldPorts(flagsWithPorts(t, tt.local, tt.args)), tt.want)
		})
	}
}

// TestOwnPorts: the ports no destination may be are the manager's and the control
// plane's on a host, plus every running Envoy's (none here), but not the demo API's,
// which the demo's Backend calls; in a cluster, the Envoy pod's admin port.
func TestOwnPorts(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		local    bool
		provider infra.Provider
		want     map[uint32]string // port -> a word of its description
	}{
		{name: "portcullis local --demo: the control plane and the manager, not the demo API", local: true, args: []string{"--demo"}, provider: &infra.Host{},
			want: map[uint32]string{16443: "kube-apiserver", 12379: "etcd", 12380: "etcd", 18000: "xDS", 16480: "metrics", 16481: "health"}},
		{name: "the manager with the host provider: its own ports", args: []string{"--provider", "host"}, provider: &infra.Host{},
			want: map[uint32]string{18000: "xDS", 8443: "metrics", 8081: "health"}},
		{name: "in a cluster: the admin interface in the Envoy pod", args: []string{"--provider", "kubernetes", "--namespace", "p"}, provider: &infra.Kubernetes{},
			want: map[uint32]string{infra.AdminPort: "admin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkPorts(t, ownPorts(flagsWithPorts(t, tt.local, tt.args), tt.provider)(), tt.want)
		})
	}
}

// flagsWithPorts parses the manager's flags, or local's with the ports of its control
// plane handed to the manager as `portcullis local` does.
func flagsWithPorts(t *testing.T, local bool, args []string) *managerFlags {
	t.Helper()
	if !local {
		return parseManagerFlags(t, args...)
	}
	f := parseLocal(t, args...)
	f.holdPorts()
	return f.manager
}

// checkPorts compares ports with want (port -> a word its description must contain).
func checkPorts(t *testing.T, got, want map[uint32]string) {
	t.Helper()
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("ports %v, want %v", got, want)
	}
	for port, word := range want {
		if !strings.Contains(got[port], word) {
			t.Errorf("port %d is %q, want a description naming %q", port, got[port], word)
		}
	}
}
