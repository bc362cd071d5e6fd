package dnsguard

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
)

func cliServer(t *testing.T) *dnstest.Server {
	t.Helper()
	srv := dnstest.NewServer(t)
	srv.Set("api.example.com", "api.example.com. 60 IN CNAME edge.example.net.", "edge.example.net. 120 IN A 93.184.216.34", "edge.example.net. 120 IN AAAA 2606:2800:220:1::1")
	srv.Set("mixed.example.com", "mixed.example.com. 30 IN A 93.184.216.35", "mixed.example.com. 30 IN A 10.0.0.7")
	srv.Set("private.example.com", "private.example.com. 30 IN A 169.254.169.254")
	srv.Set("sneaky.example.com", "sneaky.example.com. 30 IN CNAME kubernetes.default.svc.cluster.local.")
	return srv
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = RunResolveCommand(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunResolveCommandText(t *testing.T) {
	srv := cliServer(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr string
	}{
		{
			name:     "a resolvable name exits 0 and shows chain, TTL and addresses",
			args:     []string{"--dns-server", srv.Addr(), "api.example.com"},
			wantCode: 0,
			wantStdout: []string{
				"api.example.com: Resolved (ttl 1m0s)",
				"cname chain: api.example.com -> edge.example.net",
				"vetted:  93.184.216.34", "vetted:  2606:2800:220:1::1",
			},
		},
		{
			name:       "a partly blocked name exits 0 and says why the rest was refused",
			args:       []string{"--dns-server", srv.Addr(), "mixed.example.com"},
			wantCode:   0,
			wantStdout: []string{"vetted:  93.184.216.35", "blocked: 10.0.0.7: private (10.0.0.0/8)"},
		},
		{
			name:       "an all-blocked name exits 1 and says why",
			args:       []string{"--dns-server", srv.Addr(), "private.example.com"},
			wantCode:   1,
			wantStdout: []string{"private.example.com: AllAddressesForbidden", "blocked: 169.254.169.254: cloud metadata endpoint in link-local (169.254.169.254/32)"},
		},
		{
			name:       "a CNAME to a cluster name exits 1 naming the target",
			args:       []string{"--dns-server", srv.Addr(), "sneaky.example.com"},
			wantCode:   1,
			wantStdout: []string{"sneaky.example.com: ForbiddenName", "why: CNAME target kubernetes.default.svc.cluster.local is refused: under refused suffix .cluster.local"},
		},
		{
			name:       "a refused name exits 1 without a query",
			args:       []string{"--dns-server", srv.Addr(), "metadata.google.internal"},
			wantCode:   1,
			wantStdout: []string{"metadata.google.internal: ForbiddenName", "under refused suffix .internal"},
		},
		{
			name:       "one failing name among good ones exits 1, all printed in order",
			args:       []string{"--dns-server", srv.Addr(), "api.example.com", "missing.example.com", "mixed.example.com"},
			wantCode:   1,
			wantStdout: []string{"api.example.com: Resolved", "missing.example.com: NXDomain", "mixed.example.com: Resolved"},
		},
		{
			name:       "flags after names are parsed",
			args:       []string{"mixed.example.com", "--dns-server", srv.Addr(), "--allow-cidr", "10.0.0.0/8"},
			wantCode:   0,
			wantStdout: []string{"vetted:  10.0.0.7", "vetted:  93.184.216.35"},
		},
		{
			name:       "a deny flag refuses a public address",
			args:       []string{"--dns-server", srv.Addr(), "--deny-cidr", "93.184.216.0/24", "--dns-ip-family", "ipv4", "api.example.com"},
			wantCode:   1,
			wantStdout: []string{"blocked: 93.184.216.34: denied CIDR (93.184.216.0/24)"},
		},
		{name: "no name is a usage error", args: []string{"--dns-server", srv.Addr()}, wantCode: 2, wantStderr: "no NAME given"},
		{name: "bad output format is a usage error", args: []string{"-o", "yaml", "api.example.com"}, wantCode: 2, wantStderr: `-o "yaml": want text or json`},
		{name: "unknown flag is a usage error", args: []string{"--bogus", "api.example.com"}, wantCode: 2, wantStderr: "flag provided but not defined: -bogus"},
		{name: "invalid CIDR is a usage error", args: []string{"--dns-server", srv.Addr(), "--allow-cidr", "10.0.0.0/33", "api.example.com"}, wantCode: 2, wantStderr: `--allow-cidr "10.0.0.0/33": invalid CIDR`},
		{name: "a DNS server name is a usage error", args: []string{"--dns-server", "dns.google", "api.example.com"}, wantCode: 2, wantStderr: `--dns-server "dns.google": not an IP address`},
		{name: "bad IP family is a usage error", args: []string{"--dns-ip-family", "ipv5", "api.example.com"}, wantCode: 2, wantStderr: "want ipv4, ipv6 or dual"},
		{name: "help exits 0", args: []string{"-h"}, wantCode: 0, wantStderr: "Usage: portcullis dnsguard resolve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			last := -1
			for _, want := range tt.wantStdout {
				i := strings.Index(stdout, want)
				if i < 0 {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				} else if strings.Contains(tt.name, "in order") && i < last {
					t.Errorf("%q printed out of order:\n%s", want, stdout)
				}
				last = i
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
		})
	}
}

func TestRunResolveCommandJSON(t *testing.T) {
	srv := cliServer(t)
	code, stdout, stderr := runCLI("--dns-server", srv.Addr(), "-o", "json", "api.example.com", "mixed.example.com", "private.example.com")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (private.example.com has no vetted address); stderr %s", code, stderr)
	}
	var got []struct {
		Name       string                  `json:"name"`
		State      egress.ResolutionState  `json:"state"`
		Message    string                  `json:"message"`
		CNAMEChain []string                `json:"cnameChain"`
		TTLSeconds int64                   `json:"ttlSeconds"`
		Vetted     []string                `json:"vetted"`
		Blocked    []egress.BlockedAddress `json:"blocked"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	if len(got) != 3 {
		t.Fatalf("%d results, want 3", len(got))
	}
	api, mixed, private := got[0], got[1], got[2]
	if api.Name != "api.example.com" || api.State != egress.ResolutionResolved || api.TTLSeconds != 60 ||
		strings.Join(api.CNAMEChain, ",") != "edge.example.net" || strings.Join(api.Vetted, ",") != "93.184.216.34,2606:2800:220:1::1" {
		t.Errorf("api.example.com = %+v", api)
	}
	if len(mixed.Blocked) != 1 || mixed.Blocked[0].IP.String() != "10.0.0.7" || mixed.Blocked[0].Reason != "private (10.0.0.0/8)" {
		t.Errorf("mixed.example.com blocked = %+v", mixed.Blocked)
	}
	if private.State != egress.ResolutionAllForbidden || len(private.Vetted) != 0 || private.Vetted == nil || !strings.Contains(private.Message, "refused") {
		t.Errorf("private.example.com = %+v (vetted must be an empty list, not null)", private)
	}
	if code, _, _ := runCLI("--dns-server", srv.Addr(), "-o", "json", "api.example.com"); code != 0 {
		t.Errorf("exit %d for a resolvable name, want 0", code)
	}
}

func TestServersFromResolvConf(t *testing.T) {
	// Without --dns-server the servers come from resolv.conf; a missing file is an error
	// that says what to do.
	cfg := DefaultConfig()
	cfg.ResolvConf = filepath.Join(t.TempDir(), "absent.conf")
	_, err := NewResolver(cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "no --dns-server given and") {
		t.Fatalf("err = %v", err)
	}
	srv := cliServer(t)
	path := filepath.Join(t.TempDir(), "resolv.conf")
	host, _, _ := strings.Cut(srv.Addr(), ":")
	if err := os.WriteFile(path, []byte("search example.com\nnameserver "+host+"\noptions ndots:5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.ResolvConf = path
	servers, err := cfg.Servers()
	if err != nil || len(servers) != 1 || servers[0] != host+":53" {
		t.Fatalf("servers = %v, %v; want %s:53", servers, err, host)
	}
}
