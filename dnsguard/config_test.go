package dnsguard

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigFlags(t *testing.T) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	err := fs.Parse([]string{
		"--dns-server", "10.0.0.53", "--dns-server", "[fd00::53]:5353,192.0.2.53:53",
		"--dns-ip-family", "IPv4",
		"--cluster-domain", "corp.k8s",
		"--cluster-cidr", "10.96.0.0/12,10.244.0.0/16", "--cluster-cidr", "fd00:10::/64",
		"--deny-cidr", "93.184.216.0/24",
		"--allow-cidr", "10.1.2.3/32", "--allow-cidr", " 10.1.2.4/32 , ",
		"--deny-name-suffix", "corp.example,.lab.example",
		"--dns-min-ttl", "10s", "--dns-max-ttl", "10m", "--dns-stale-grace", "1m",
		"--dns-timeout", "500ms", "--dns-attempts", "3",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		DNSServers:       []string{"10.0.0.53", "[fd00::53]:5353", "192.0.2.53:53"},
		IPFamily:         IPv4,
		ClusterDomain:    "corp.k8s",
		ClusterCIDRs:     []string{"10.96.0.0/12", "10.244.0.0/16", "fd00:10::/64"},
		DenyCIDRs:        []string{"93.184.216.0/24"},
		AllowCIDRs:       []string{"10.1.2.3/32", "10.1.2.4/32"},
		DenyNameSuffixes: []string{"corp.example", ".lab.example"},
		MinTTL:           10 * time.Second, MaxTTL: 10 * time.Minute, StaleGrace: time.Minute,
		Timeout: 500 * time.Millisecond, Attempts: 3, ResolvConf: DefaultResolvConf,
	}
	if !configEqual(cfg, want) {
		t.Fatalf("parsed %+v\nwant   %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	servers, err := cfg.Servers()
	if err != nil || !slices.Equal(servers, []string{"10.0.0.53:53", "[fd00::53]:5353", "192.0.2.53:53"}) {
		t.Errorf("Servers = %v, %v", servers, err)
	}
}

func configEqual(a, b Config) bool {
	return slices.Equal(a.DNSServers, b.DNSServers) && a.IPFamily == b.IPFamily && a.ClusterDomain == b.ClusterDomain &&
		slices.Equal(a.ClusterCIDRs, b.ClusterCIDRs) && slices.Equal(a.DenyCIDRs, b.DenyCIDRs) &&
		slices.Equal(a.AllowCIDRs, b.AllowCIDRs) && slices.Equal(a.DenyNameSuffixes, b.DenyNameSuffixes) &&
		a.MinTTL == b.MinTTL && a.MaxTTL == b.MaxTTL && a.StaleGrace == b.StaleGrace &&
		a.Timeout == b.Timeout && a.Attempts == b.Attempts && a.ResolvConf == b.ResolvConf
}

func TestConfigDefaults(t *testing.T) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg.IPFamily != DualStack || cfg.ClusterDomain != "cluster.local" || cfg.MinTTL != 5*time.Second ||
		cfg.MaxTTL != 300*time.Second || cfg.StaleGrace != 5*time.Minute || cfg.Timeout != 2*time.Second || cfg.Attempts != 2 ||
		len(cfg.DNSServers) != 0 {
		t.Errorf("defaults = %+v", cfg)
	}
	for _, name := range []string{"dns-server", "dns-ip-family", "cluster-domain", "cluster-cidr", "deny-cidr", "allow-cidr",
		"deny-name-suffix", "dns-min-ttl", "dns-max-ttl", "dns-stale-grace", "dns-timeout", "dns-attempts"} {
		if fs.Lookup(name) == nil {
			t.Errorf("flag --%s is not registered", name)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"bad allow CIDR", func(c *Config) { c.AllowCIDRs = []string{"10.0.0.0/33"} }, `--allow-cidr "10.0.0.0/33": invalid CIDR`},
		{"bad cluster CIDR", func(c *Config) { c.ClusterCIDRs = []string{"10.96.0.0"} }, `--cluster-cidr "10.96.0.0": invalid CIDR: no prefix length`},
		{"DNS server by name", func(c *Config) { c.DNSServers = []string{"dns.google"} }, `--dns-server "dns.google": not an IP address or IP:port`},
		{"DNS server on port 0", func(c *Config) { c.DNSServers = []string{"10.0.0.53:0"} }, `--dns-server "10.0.0.53:0": port 0`},
		{"unknown IP family", func(c *Config) { c.IPFamily = "both" }, `--dns-ip-family "both": want ipv4, ipv6 or dual`},
		{"bad cluster domain", func(c *Config) { c.ClusterDomain = "a b" }, `--cluster-domain "a b"`},
		{"bad deny suffix", func(c *Config) { c.DenyNameSuffixes = []string{"*.corp"} }, `--deny-name-suffix "*.corp"`},
		{"min TTL above max", func(c *Config) { c.MinTTL = 10 * time.Minute }, "--dns-min-ttl 10m0s is above --dns-max-ttl 5m0s"},
		{"negative min TTL", func(c *Config) { c.MinTTL = -time.Second }, "--dns-min-ttl -1s: must not be negative"},
		{"zero max TTL", func(c *Config) { c.MaxTTL = 0; c.MinTTL = 0 }, "--dns-max-ttl 0s: must be positive"},
		{"negative grace", func(c *Config) { c.StaleGrace = -time.Second }, "--dns-stale-grace -1s"},
		{"zero timeout", func(c *Config) { c.Timeout = 0 }, "--dns-timeout 0s: must be positive"},
		{"zero attempts", func(c *Config) { c.Attempts = 0 }, "--dns-attempts 0: must be between 1 and 10"},
		{"too many attempts", func(c *Config) { c.Attempts = 11 }, "--dns-attempts 11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want it to contain %q", err, tt.wantErr)
			}
			if _, rerr := NewResolver(cfg, nil); rerr == nil {
				t.Error("NewResolver accepted an invalid config")
			}
		})
	}
	t.Run("bad IP family flag value", func(t *testing.T) {
		cfg := DefaultConfig()
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		cfg.RegisterFlags(fs)
		if err := fs.Parse([]string{"--dns-ip-family", "ipv5"}); err == nil || !strings.Contains(err.Error(), "want ipv4, ipv6 or dual") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestServersFromResolvConfVariants(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string
		wantErr string
	}{
		{"IPv4 and IPv6 nameservers in order", "nameserver 10.0.0.10\nnameserver fd00::10\n", []string{"10.0.0.10:53", "[fd00::10]:53"}, ""},
		{"no nameserver", "search example.com\n", nil, "names no nameserver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "resolv.conf")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.ResolvConf = path
			got, err := cfg.Servers()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Servers = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestClusterPrefixes checks what the translator receives from --cluster-cidr: parsed
// prefixes, an IPv4-mapped one as IPv4, and an error naming the flag.
func TestClusterPrefixes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ClusterCIDRs = []string{"10.96.0.0/12", " fd00:10::/64", "::ffff:10.244.0.0/112"}
	got, err := cfg.ClusterPrefixes()
	want := []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("fd00:10::/64"), netip.MustParsePrefix("10.244.0.0/16")}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ClusterPrefixes() = %v, %v; want %v", got, err, want)
	}
	cfg.ClusterCIDRs = []string{"10.96.0.1/12"}
	if _, err := cfg.ClusterPrefixes(); err == nil || !strings.Contains(err.Error(), "--cluster-cidr") {
		t.Fatalf("a CIDR with host bits: err %v, want one naming --cluster-cidr", err)
	}
}
