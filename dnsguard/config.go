package dnsguard

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// IPFamily says which address records the guard asks for.
type IPFamily string

// The IP families of --dns-ip-family.
const (
	IPv4      IPFamily = "ipv4"
	IPv6      IPFamily = "ipv6"
	DualStack IPFamily = "dual"
)

// DefaultResolvConf is where the DNS servers come from when --dns-server is not set.
const DefaultResolvConf = "/etc/resolv.conf"

// Config holds every setting of the guard. The zero value is not usable: start from
// DefaultConfig, then RegisterFlags or set fields, then Validate.
type Config struct {
	// DNSServers are IP or IP:port (default port 53), tried in order. Empty means the
	// nameservers of ResolvConf.
	DNSServers []string
	// IPFamily selects A (ipv4), AAAA (ipv6) or both (dual) queries.
	IPFamily IPFamily
	// ClusterDomain is refused as a name suffix, like the built-in ones.
	ClusterDomain string
	// ClusterCIDRs (pod and service ranges), DenyCIDRs and AllowCIDRs are CIDRs such as
	// 10.96.0.0/12. An address inside an allow CIDR passes even though a built-in
	// special-purpose range covers it; against a cluster or deny CIDR the more specific
	// of the two prefixes wins.
	ClusterCIDRs []string
	DenyCIDRs    []string
	AllowCIDRs   []string
	// DenyNameSuffixes are refused like the built-in suffixes (e.g. corp.example).
	DenyNameSuffixes []string
	// MinTTL and MaxTTL clamp every answer's TTL.
	MinTTL time.Duration
	MaxTTL time.Duration
	// StaleGrace is how long the last vetted addresses stay in use while resolution fails.
	StaleGrace time.Duration
	// Timeout bounds one query to one server; Attempts is how many rounds over all servers.
	Timeout  time.Duration
	Attempts int
	// ResolvConf is read for the servers when DNSServers is empty (DefaultResolvConf).
	ResolvConf string
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		IPFamily:      DualStack,
		ClusterDomain: "cluster.local",
		MinTTL:        5 * time.Second,
		MaxTTL:        300 * time.Second,
		StaleGrace:    5 * time.Minute,
		Timeout:       2 * time.Second,
		Attempts:      2,
		ResolvConf:    DefaultResolvConf,
	}
}

// RegisterFlags binds the guard's flags to c; the current field values are the defaults.
// List flags may be repeated and take comma-separated values.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Var((*listFlag)(&c.DNSServers), "dns-server", "DNS server IP or IP:port, tried in order (repeatable; default: the nameservers of "+DefaultResolvConf+")")
	fs.Var((*familyFlag)(&c.IPFamily), "dns-ip-family", "address records to ask for: ipv4 (A), ipv6 (AAAA) or dual (both)")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", c.ClusterDomain, "the cluster's DNS domain; names under it are refused")
	fs.Var((*listFlag)(&c.ClusterCIDRs), "cluster-cidr", "pod or service CIDR: DNS answers in it are refused, and Service endpoints outside every cluster CIDR must pass the address policy (repeatable)")
	fs.Var((*listFlag)(&c.DenyCIDRs), "deny-cidr", "extra CIDR whose addresses are refused (repeatable)")
	fs.Var((*listFlag)(&c.AllowCIDRs), "allow-cidr", "CIDR whose addresses are allowed even inside a denied range (repeatable; operator exceptions)")
	fs.Var((*listFlag)(&c.DenyNameSuffixes), "deny-name-suffix", "extra DNS suffix whose names are refused (repeatable)")
	fs.DurationVar(&c.MinTTL, "dns-min-ttl", c.MinTTL, "lowest TTL an answer is kept for")
	fs.DurationVar(&c.MaxTTL, "dns-max-ttl", c.MaxTTL, "highest TTL an answer is kept for")
	fs.DurationVar(&c.StaleGrace, "dns-stale-grace", c.StaleGrace, "how long the last vetted addresses stay in use while resolution fails")
	fs.DurationVar(&c.Timeout, "dns-timeout", c.Timeout, "timeout of one query to one server")
	fs.IntVar(&c.Attempts, "dns-attempts", c.Attempts, "rounds over all DNS servers before a query fails")
}

// Validate reports every invalid setting, each naming its flag.
func (c Config) Validate() error {
	var errs []error
	for _, s := range c.DNSServers {
		if _, err := parseServer(s); err != nil {
			errs = append(errs, fmt.Errorf("--dns-server %q: %w", s, err))
		}
	}
	switch c.IPFamily {
	case IPv4, IPv6, DualStack:
	default:
		errs = append(errs, fmt.Errorf("--dns-ip-family %q: want ipv4, ipv6 or dual", c.IPFamily))
	}
	if _, err := NewNamePolicy(c.ClusterDomain, c.DenyNameSuffixes); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.AddressPolicy(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateTimes()...)
	return errors.Join(errs...)
}

func (c Config) validateTimes() []error {
	var errs []error
	if c.MinTTL < 0 {
		errs = append(errs, fmt.Errorf("--dns-min-ttl %v: must not be negative", c.MinTTL))
	}
	if c.MaxTTL <= 0 {
		errs = append(errs, fmt.Errorf("--dns-max-ttl %v: must be positive", c.MaxTTL))
	}
	if c.MinTTL > c.MaxTTL {
		errs = append(errs, fmt.Errorf("--dns-min-ttl %v is above --dns-max-ttl %v", c.MinTTL, c.MaxTTL))
	}
	if c.StaleGrace < 0 {
		errs = append(errs, fmt.Errorf("--dns-stale-grace %v: must not be negative", c.StaleGrace))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--dns-timeout %v: must be positive", c.Timeout))
	}
	if c.Attempts < 1 || c.Attempts > 10 {
		errs = append(errs, fmt.Errorf("--dns-attempts %d: must be between 1 and 10", c.Attempts))
	}
	return errs
}

// NamePolicy compiles the name policy of c.
func (c Config) NamePolicy() (*NamePolicy, error) {
	return NewNamePolicy(c.ClusterDomain, c.DenyNameSuffixes)
}

// AddressPolicy compiles the address policy of c.
func (c Config) AddressPolicy() (*AddressPolicy, error) {
	return NewAddressPolicy(c.ClusterCIDRs, c.DenyCIDRs, c.AllowCIDRs)
}

// ClusterPrefixes parses ClusterCIDRs for the translator, which admits Service
// endpoints inside them (translate.Options.ClusterCIDRs).
func (c Config) ClusterPrefixes() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(c.ClusterCIDRs))
	for _, raw := range c.ClusterCIDRs {
		p, err := parseCIDR(raw)
		if err != nil {
			return nil, fmt.Errorf("--cluster-cidr %q: %w", raw, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *listFlag) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

type familyFlag IPFamily

func (f *familyFlag) String() string {
	if f == nil {
		return ""
	}
	return string(*f)
}

func (f *familyFlag) Set(v string) error {
	switch fam := IPFamily(strings.ToLower(strings.TrimSpace(v))); fam {
	case IPv4, IPv6, DualStack:
		*f = familyFlag(fam)
		return nil
	}
	return errors.New("want ipv4, ipv6 or dual")
}

// parseServer accepts IP or IP:port (brackets around an IPv6 address with a port) and
// returns host:port.
func parseServer(s string) (string, error) {
	s = strings.TrimSpace(s)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return "", errors.New("port 0")
		}
		return ap.String(), nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return netip.AddrPortFrom(a, 53).String(), nil
	}
	return "", errors.New("not an IP address or IP:port (a DNS server is never a name)")
}
