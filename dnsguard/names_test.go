package dnsguard

import (
	"regexp"
	"strings"
	"testing"
)

func mustNamePolicy(t testing.TB, clusterDomain string, deny ...string) *NamePolicy {
	t.Helper()
	p, err := NewNamePolicy(clusterDomain, deny)
	if err != nil {
		t.Fatalf("NewNamePolicy(%q, %q): %v", clusterDomain, deny, err)
	}
	return p
}

func TestNamePolicy(t *testing.T) {
	p := mustNamePolicy(t, "corp.k8s", "blocked.example", ".Other.Example.")
	label63 := strings.Repeat("a", 63)
	name253 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".")
	tests := []struct {
		name       string
		in         string
		wantOK     bool
		wantReason string
	}{
		// allowed
		{"plain two-label name", "example.com", true, ""},
		{"three labels", "api.example.com", true, ""},
		{"uppercase is folded", "API.Example.COM", true, ""},
		{"one trailing dot is tolerated", "api.example.com.", true, ""},
		{"punycode", "xn--mnchen-3ya.de", true, ""},
		{"label starting with a digit", "1password.com", true, ""},
		{"last label mixes digits and letters", "example.123a", true, ""},
		{"hyphen inside a label", "my-api.example.com", true, ""},
		{"label of 63 characters", label63 + ".com", true, ""},
		{"name of 253 characters", name253, true, ""},
		{"localhost as a leftmost label only", "localhost.example.com", true, ""},
		{"svc as a middle label only", "svc.example.com", true, ""},
		{"cluster.local inside, not at the end", "cluster.local.example.com", true, ""},
		{"suffix text without the dot boundary", "x.clusterlocal", true, ""},
		{"evilsvc is not svc", "foo.evilsvc", true, ""},
		{"notinternal is not internal", "foo.notinternal", true, ""},
		{"name next to the cluster domain", "x.corp.k8s2", true, ""},
		{"name next to a denied suffix", "x.notblocked.example", true, ""},
		// built-in suffixes, exact and under
		{"localhost", "localhost", false, "refused name localhost"},
		{"under localhost", "foo.localhost", false, "under refused suffix .localhost"},
		{"LOCALHOST uppercase with dot", "LOCALHOST.", false, "refused name localhost"},
		{"under local", "printer.local", false, "under refused suffix .local"},
		{"local itself", "local", false, "refused name local"},
		{"under internal", "metadata.google.internal", false, "under refused suffix .internal"},
		{"internal itself", "internal", false, "refused name internal"},
		{"under localdomain", "host.localdomain", false, "under refused suffix .localdomain"},
		{"under home.arpa", "nas.home.arpa", false, "under refused suffix .home.arpa"},
		{"home.arpa itself", "home.arpa", false, "refused name home.arpa"},
		{"under cluster.local", "kubernetes.default.svc.cluster.local", false, "under refused suffix .cluster.local"},
		{"cluster.local itself", "cluster.local", false, "refused name cluster.local"},
		{"under svc", "kubernetes.default.svc", false, "under refused suffix .svc"},
		{"under in-addr.arpa", "1.0.0.10.in-addr.arpa", false, "under refused suffix .in-addr.arpa"},
		{"in-addr.arpa itself", "in-addr.arpa", false, "refused name in-addr.arpa"},
		{"under ip6.arpa", "1.0.ip6.arpa", false, "under refused suffix .ip6.arpa"},
		{"mixed case under a suffix", "Kubernetes.Default.SVC", false, "under refused suffix .svc"},
		{"trailing dot under a suffix", "x.cluster.local.", false, "under refused suffix .cluster.local"},
		// configured suffixes
		{"service name under the cluster domain", "api.ns.svc.corp.k8s", false, "under refused suffix .corp.k8s (cluster domain)"},
		{"under the cluster domain directly", "api.corp.k8s", false, "under refused suffix .corp.k8s (cluster domain)"},
		{"the cluster domain itself", "corp.k8s", false, "refused name corp.k8s (cluster domain)"},
		{"under a denied suffix", "a.blocked.example", false, "under refused suffix .blocked.example (--deny-name-suffix)"},
		{"denied suffix given with dots and case", "x.other.example", false, "under refused suffix .other.example (--deny-name-suffix)"},
		// IP literals in any spelling
		{"dotted IPv4", "127.0.0.1", false, "IP address literal"},
		{"dotted IPv4 with trailing dot", "127.0.0.1.", false, "IP address literal"},
		{"short dotted form", "127.1", false, "IP address literal"},
		{"decimal form", "2130706433", false, "IP address literal"},
		{"hex form", "0x7f000001", false, "IP address literal"},
		{"uppercase hex form", "0X7F000001", false, "IP address literal"},
		{"octal form", "017700000001", false, "IP address literal"},
		{"hex octet then decimal", "0x7f.0.0.1", false, "IP address literal"},
		{"decimal octets then hex", "127.0.0.0x1", false, "IP address literal"},
		{"public dotted IPv4", "8.8.8.8", false, "IP address literal"},
		{"bare 0x", "a.0x", false, "IP address literal"},
		{"IPv6 loopback", "::1", false, "IP address literal"},
		{"bracketed IPv6", "[::1]", false, "IP address literal"},
		{"IPv6 with a zone", "fe80::1%eth0", false, "IP address literal"},
		{"IPv4-mapped IPv6", "::ffff:127.0.0.1", false, "IP address literal"},
		{"numeric last label of a name", "example.123", false, "IP address literal"},
		// syntax
		{"empty", "", false, "empty name"},
		{"only a dot", ".", false, "empty name"},
		{"two trailing dots", "api.example.com..", false, "empty label"},
		{"leading dot", ".example.com", false, "empty label"},
		{"empty middle label", "a..example.com", false, "empty label"},
		{"single label", "example", false, "single-label name"},
		{"label starts with a hyphen", "-a.example.com", false, "starts or ends with '-'"},
		{"label ends with a hyphen", "a-.example.com", false, "starts or ends with '-'"},
		{"underscore", "_dmarc.example.com", false, "invalid character"},
		{"space", "a b.example.com", false, "invalid character"},
		{"backslash escape", `a\.b.example.com`, false, "invalid character"},
		{"label of 64 characters", label63 + "a.com", false, "longer than 63"},
		{"name of 254 characters", "a" + name253, false, "longer than 253"},
		{"wildcard", "*.example.com", false, "wildcard"},
		{"non-ASCII letter", "exämple.com", false, "invalid character"},
		{"Kelvin sign is not folded to k", "\u212aubernetes.example.com", false, "invalid character"},
		{"NUL byte", "a\x00.example.com", false, "invalid character"},
		{"URL, not a name", "https://example.com", false, "invalid character"},
		{"name with a port", "example.com:443", false, "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason := p.CheckName(tt.in)
			if ok != tt.wantOK {
				t.Fatalf("CheckName(%q) ok = %v (%q), want %v", tt.in, ok, reason, tt.wantOK)
			}
			if tt.wantOK && reason != "" {
				t.Errorf("CheckName(%q) allowed with reason %q, want none", tt.in, reason)
			}
			if !strings.Contains(reason, tt.wantReason) {
				t.Errorf("CheckName(%q) reason = %q, want it to contain %q", tt.in, reason, tt.wantReason)
			}
		})
	}
}

func TestNamePolicyDefaultClusterDomain(t *testing.T) {
	cfg := DefaultConfig()
	p, err := cfg.NamePolicy()
	if err != nil {
		t.Fatal(err)
	}
	if ok, reason := p.CheckName("api.ns.svc.cluster.local"); ok || !strings.Contains(reason, ".cluster.local") {
		t.Errorf("default policy: CheckName(api.ns.svc.cluster.local) = %v, %q; want refused under .cluster.local", ok, reason)
	}
	if ok, _ := p.CheckName("api.corp.k8s"); !ok {
		t.Error("default policy refuses api.corp.k8s, which only a custom --cluster-domain refuses")
	}
}

func TestNewNamePolicyErrors(t *testing.T) {
	tests := []struct {
		name          string
		clusterDomain string
		deny          []string
		wantErr       string
	}{
		{"empty cluster domain", "", nil, `--cluster-domain "": empty DNS suffix`},
		{"cluster domain with an underscore", "my_cluster.local", nil, `--cluster-domain "my_cluster.local": not a DNS suffix`},
		{"wildcard deny suffix", "cluster.local", []string{"*.corp"}, `--deny-name-suffix "*.corp": not a DNS suffix`},
		{"empty deny suffix after trimming dots", "cluster.local", []string{"."}, `--deny-name-suffix ".": empty DNS suffix`},
		{"deny suffix with an empty label", "cluster.local", []string{"a..b"}, `--deny-name-suffix "a..b": not a DNS suffix: empty label`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewNamePolicy(tt.clusterDomain, tt.deny)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewNamePolicy error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	if _, err := NewNamePolicy("cluster.local", []string{"corp", ".Example.ORG."}); err != nil {
		t.Errorf("single-label and dotted mixed-case suffixes must be accepted: %v", err)
	}
}

// naiveNameOK restates the CRD's CEL rules (api/v1alpha1, destination_types.go) with Go regexps, plus
// the configured suffixes: the independent model the fuzz target compares against.
var (
	celIPLiteral = regexp.MustCompile(`^(.*[.])?(0[xX][0-9a-fA-F]*|[0-9]+)[.]?$`)
	celRFC1123   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?([.][a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)+$`)
)

func naiveNameOK(name string, suffixes []string) bool {
	n := strings.TrimSuffix(name, ".")
	var b strings.Builder
	for i := 0; i < len(n); i++ {
		c := n[i]
		if c >= 'A' && c <= 'Z' {
			c += 32
		}
		b.WriteByte(c)
	}
	n = b.String()
	if n == "" || len(n) > 253 || strings.Contains(n, "*") || celIPLiteral.MatchString(n) || !celRFC1123.MatchString(n) {
		return false
	}
	for _, s := range suffixes {
		if n == s || strings.HasSuffix(n, "."+s) {
			return false
		}
	}
	return true
}

func FuzzNamePolicy(f *testing.F) {
	for _, s := range []string{
		"api.example.com", "API.EXAMPLE.COM.", "localhost", "a.cluster.local", "x.corp.k8s",
		"127.0.0.1", "0x7f000001", "2130706433", "::1", "[::1]", "a..b", "-a.b", "a_b.c",
		"*.example.com", "exämple.com", "a.blocked.example", "example.123", "example.0x", "a.b.",
		strings.Repeat("a.", 127) + "com", "\u212a.example.com", "xn--mnchen-3ya.de",
	} {
		f.Add(s)
	}
	p := mustNamePolicy(f, "corp.k8s", "blocked.example")
	suffixes := append(append([]string{}, builtinRefusedSuffixes...), "corp.k8s", "blocked.example")
	f.Fuzz(func(t *testing.T, name string) {
		ok, reason := p.CheckName(name)
		if want := naiveNameOK(name, suffixes); ok != want {
			t.Fatalf("CheckName(%q) = %v (%q); the CEL model says %v", name, ok, reason, want)
		}
		if ok == (reason != "") {
			t.Fatalf("CheckName(%q) = %v with reason %q: a refusal needs a reason, an allowance none", name, ok, reason)
		}
	})
}
