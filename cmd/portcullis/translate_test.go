package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranslateREADMEExample runs the README's example from the repository root, as a
// user would.
func TestTranslateREADMEExample(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
		notWant  []string
	}{
		{
			name:     "a vetted address becomes the Backend's endpoint and every status is printed",
			args:     []string{"translate", "-f", "examples/translate/egress.yaml", "--address", "api.example.com=93.184.215.14"},
			wantCode: 0,
			want:     []string{"name: egress-gateway/egress", "address: 93.184.215.14", "sni: api.example.com", "reason: Resolved", "apps/example-api:"},
		},
		{
			name:     "an address the guard refuses is reported and never becomes an endpoint",
			args:     []string{"translate", "-f", "examples/translate/egress.yaml", "--address", "api.example.com=169.254.169.254"},
			wantCode: 0,
			want:     []string{"reason: AllAddressesForbidden", "ip: 169.254.169.254", "link-local"},
			notWant:  []string{"address: 169.254.169.254"},
		},
		{
			name:     "static-bootstrap prints a complete Envoy configuration",
			args:     []string{"translate", "-f", "examples/translate/egress.yaml", "--address", "api.example.com=93.184.215.14", "-o", "static-bootstrap"},
			wantCode: 0,
			want:     []string{"static_resources:", "port_value: 10080", "address: 93.184.215.14", "admin:"},
		},
		{name: "no file is a usage error", args: []string{"translate"}, wantCode: 2},
		{name: "a malformed --address is a usage error naming the flag", args: []string{"translate", "-f", "examples/translate/egress.yaml", "--address", "api.example.com"}, wantCode: 2},
		{name: "an unknown output is a usage error", args: []string{"translate", "-f", "examples/translate/egress.yaml", "-o", "xml"}, wantCode: 2},
		{name: "a missing file fails", args: []string{"translate", "-f", "does-not-exist.yaml"}, wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, tt.wantCode, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, nw := range tt.notWant {
				if strings.Contains(stdout.String(), nw) {
					t.Errorf("output contains %q", nw)
				}
			}
		})
	}
}

// TestDNSGuardResolveREADMEExample runs the README's blocked-name example: the name policy
// refuses it before any query, so it needs no DNS server.
func TestDNSGuardResolveREADMEExample(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"dnsguard", "resolve", "metadata.google.internal"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit code %d, want 1 (no vetted address); stderr: %s", code, stderr.String())
	}
	for _, want := range []string{"metadata.google.internal: ForbiddenName", "under refused suffix .internal"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	if code := run([]string{"dnsguard"}, &stdout, &stderr); code != 2 {
		t.Errorf("dnsguard without a verb: exit %d, want 2", code)
	}
}
