package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "no arguments prints usage listing the subcommands", args: nil, wantCode: 0, wantStdout: "version"},
		{name: "help prints usage", args: []string{"help"}, wantCode: 0, wantStdout: "Subcommands:"},
		{name: "version names the targeted Envoy", args: []string{"version"}, wantCode: 0, wantStdout: "envoy " + EnvoyVersion},
		{name: "unknown subcommand is a usage error naming what exists", args: []string{"frobnicate"}, wantCode: 2, wantStderr: `unknown subcommand "frobnicate"; available: dnsguard, local, manager, translate, version`},
		{name: "unknown flag is a usage error", args: []string{"version", "--bogus"}, wantCode: 2, wantStderr: "flag provided but not defined: -bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr: %s)", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
