package dnsguard

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/miekg/dns"
)

// Servers returns the DNS servers as host:port, in order: DNSServers when set, else
// the nameservers of ResolvConf.
func (c Config) Servers() ([]string, error) {
	if len(c.DNSServers) > 0 {
		out := make([]string, 0, len(c.DNSServers))
		for _, s := range c.DNSServers {
			hp, err := parseServer(s)
			if err != nil {
				return nil, fmt.Errorf("--dns-server %q: %w", s, err)
			}
			out = append(out, hp)
		}
		return out, nil
	}
	path := c.ResolvConf
	if path == "" {
		path = DefaultResolvConf
	}
	cc, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("no --dns-server given and %s cannot be read: %w", path, err)
	}
	port, err := strconv.ParseUint(cc.Port, 10, 16)
	if err != nil || port == 0 {
		port = 53
	}
	var out []string
	for _, s := range cc.Servers {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.AddrPortFrom(a, uint16(port)).String())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no --dns-server given and %s names no nameserver", path)
	}
	return out, nil
}
