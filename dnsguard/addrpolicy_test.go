package dnsguard

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

func mustAddrPolicy(t testing.TB, cluster, deny, allow []string) *AddressPolicy {
	t.Helper()
	p, err := NewAddressPolicy(cluster, deny, allow)
	if err != nil {
		t.Fatalf("NewAddressPolicy(%q, %q, %q): %v", cluster, deny, allow, err)
	}
	return p
}

type addrCase struct {
	addr       string
	wantOK     bool
	wantReason string // substring of the refusal reason
}

func runAddrCases(t *testing.T, p *AddressPolicy, cases []addrCase) {
	t.Helper()
	for _, tt := range cases {
		name := tt.addr
		if tt.wantOK {
			name += " allowed"
		} else {
			name += " refused"
		}
		t.Run(name, func(t *testing.T) {
			ok, reason := p.CheckAddr(netip.MustParseAddr(tt.addr))
			if ok != tt.wantOK {
				t.Fatalf("CheckAddr(%s) = %v (%q), want %v", tt.addr, ok, reason, tt.wantOK)
			}
			if ok && reason != "" {
				t.Errorf("CheckAddr(%s) allowed with a reason %q", tt.addr, reason)
			}
			if !ok && !strings.Contains(reason, tt.wantReason) {
				t.Errorf("CheckAddr(%s) reason = %q, want it to contain %q", tt.addr, reason, tt.wantReason)
			}
		})
	}
}

// TestAddressPolicyIPv4Boundaries checks the first and last address of every IPv4
// special-purpose range and the neighbours just outside.
func TestAddressPolicyIPv4Boundaries(t *testing.T) {
	runAddrCases(t, mustAddrPolicy(t, nil, nil, nil), []addrCase{
		{"0.0.0.0", false, `"this network" (0.0.0.0/8)`},
		{"0.255.255.255", false, "(0.0.0.0/8)"},
		{"1.0.0.0", true, ""},
		{"9.255.255.255", true, ""},
		{"10.0.0.0", false, "private (10.0.0.0/8)"},
		{"10.255.255.255", false, "private (10.0.0.0/8)"},
		{"11.0.0.0", true, ""},
		{"100.63.255.255", true, ""},
		{"100.64.0.0", false, "shared address space (CGNAT) (100.64.0.0/10)"},
		{"100.127.255.255", false, "(100.64.0.0/10)"},
		{"100.128.0.0", true, ""},
		{"100.100.100.200", false, "cloud metadata endpoint in shared address space (100.100.100.200/32)"},
		{"126.255.255.255", true, ""},
		{"127.0.0.0", false, "loopback (127.0.0.0/8)"},
		{"127.0.0.1", false, "loopback (127.0.0.0/8)"},
		{"127.255.255.255", false, "loopback (127.0.0.0/8)"},
		{"128.0.0.0", true, ""},
		{"169.253.255.255", true, ""},
		{"169.254.0.0", false, "link-local (169.254.0.0/16)"},
		{"169.254.169.254", false, "cloud metadata endpoint in link-local (169.254.169.254/32)"},
		{"169.254.255.255", false, "link-local (169.254.0.0/16)"},
		{"169.255.0.0", true, ""},
		{"168.63.129.15", true, ""},
		{"168.63.129.16", false, "cloud platform endpoint (Azure WireServer) (168.63.129.16/32)"},
		{"168.63.129.17", true, ""},
		{"172.15.255.255", true, ""},
		{"172.16.0.0", false, "private (172.16.0.0/12)"},
		{"172.31.255.255", false, "private (172.16.0.0/12)"},
		{"172.32.0.0", true, ""},
		{"191.255.255.255", true, ""},
		{"192.0.0.0", false, "IETF protocol assignments (192.0.0.0/24)"},
		{"192.0.0.255", false, "(192.0.0.0/24)"},
		{"192.0.1.0", true, ""},
		{"192.0.1.255", true, ""},
		{"192.0.2.0", false, "documentation (TEST-NET-1) (192.0.2.0/24)"},
		{"192.0.2.255", false, "(192.0.2.0/24)"},
		{"192.0.3.0", true, ""},
		{"192.88.98.255", true, ""},
		{"192.88.99.0", false, "6to4 relay anycast (192.88.99.0/24)"},
		{"192.88.99.255", false, "(192.88.99.0/24)"},
		{"192.88.100.0", true, ""},
		{"192.167.255.255", true, ""},
		{"192.168.0.0", false, "private (192.168.0.0/16)"},
		{"192.168.255.255", false, "private (192.168.0.0/16)"},
		{"192.169.0.0", true, ""},
		{"198.17.255.255", true, ""},
		{"198.18.0.0", false, "benchmarking (198.18.0.0/15)"},
		{"198.19.255.255", false, "benchmarking (198.18.0.0/15)"},
		{"198.20.0.0", true, ""},
		{"198.51.99.255", true, ""},
		{"198.51.100.0", false, "documentation (TEST-NET-2) (198.51.100.0/24)"},
		{"198.51.100.255", false, "(198.51.100.0/24)"},
		{"198.51.101.0", true, ""},
		{"203.0.112.255", true, ""},
		{"203.0.113.0", false, "documentation (TEST-NET-3) (203.0.113.0/24)"},
		{"203.0.113.255", false, "(203.0.113.0/24)"},
		{"203.0.114.0", true, ""},
		{"223.255.255.255", true, ""},
		{"224.0.0.0", false, "multicast (224.0.0.0/4)"},
		{"239.255.255.255", false, "multicast (224.0.0.0/4)"},
		{"240.0.0.0", false, "reserved (240.0.0.0/4)"},
		{"255.255.255.255", false, "reserved (240.0.0.0/4)"},
		{"8.8.8.8", true, ""},
		{"1.1.1.1", true, ""},
	})
}

// TestAddressPolicyIPv6Boundaries does the same for every IPv6 range.
func TestAddressPolicyIPv6Boundaries(t *testing.T) {
	runAddrCases(t, mustAddrPolicy(t, nil, nil, nil), []addrCase{
		{"::", false, "unspecified (::/128)"},
		{"::1", false, "loopback (::1/128)"},
		{"::2", false, "IPv4-compatible (deprecated) (::/96)"},
		{"::ffff:ffff", false, "IPv4-compatible (deprecated) (::/96)"},
		{"::1:0:0", true, ""},
		{"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", true, ""},
		{"64:ff9b::808:808", false, "NAT64 (64:ff9b::/96)"},
		{"64:ff9b::", false, "NAT64 (64:ff9b::/96) embeds 0.0.0.0"},
		{"64:ff9b::ffff:ffff", false, "NAT64 (64:ff9b::/96) embeds 255.255.255.255"},
		{"64:ff9b::1:0:0", true, ""},
		{"64:ff9b:0:ffff:ffff:ffff:ffff:ffff", true, ""},
		{"64:ff9b:1::808:808", false, "local-use NAT64 (64:ff9b:1::/48)"},
		{"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", false, "(64:ff9b:1::/48"},
		{"64:ff9b:2::", true, ""},
		{"ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, ""},
		{"100::", false, "discard-only (100::/64)"},
		{"100::ffff:ffff:ffff:ffff", false, "discard-only (100::/64)"},
		{"100:0:0:1::", true, ""},
		{"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, ""},
		{"2001:4:112::", false, "IETF protocol assignments (2001::/23)"},
		{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", false, "IETF protocol assignments (2001::/23)"},
		{"2001:200::", true, ""},
		{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", true, ""},
		{"2001:db8::", false, "documentation (2001:db8::/32)"},
		{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", false, "documentation (2001:db8::/32)"},
		{"2001:db9::", true, ""},
		{"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, ""},
		{"2002:808:808::", false, "6to4 (2002::/16)"},
		{"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "6to4 (2002::/16) embeds 255.255.255.255"},
		{"2003::", true, ""},
		{"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, ""},
		{"3fff::", false, "documentation (3fff::/20)"},
		{"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", false, "documentation (3fff::/20)"},
		{"3fff:1000::", true, ""},
		{"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, ""},
		{"fc00::", false, "unique local (fc00::/7)"},
		{"fd00:ec2::254", false, "cloud metadata endpoint in unique local (fd00:ec2::254/128)"},
		{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "unique local (fc00::/7)"},
		{"fe00::", true, ""},
		{"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, ""},
		{"fe80::", false, "link-local (fe80::/10)"},
		{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "link-local (fe80::/10)"},
		{"fec0::", false, "site-local (deprecated) (fec0::/10)"},
		{"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "site-local (deprecated) (fec0::/10)"},
		{"ff00::", false, "multicast (ff00::/8)"},
		{"ff02::1", false, "multicast (ff00::/8)"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "multicast (ff00::/8)"},
		{"2606:4700:4700::1111", true, ""},
		{"2a00:1450:4001:82b::200e", true, ""},
	})
}

// TestAddressPolicyEmbeddedIPv4 checks the IPv4-mapped, NAT64 (both prefixes and both
// local-use layouts), 6to4 and Teredo forms of forbidden IPv4 addresses.
func TestAddressPolicyEmbeddedIPv4(t *testing.T) {
	p := mustAddrPolicy(t, nil, nil, nil)
	runAddrCases(t, p, []addrCase{
		{"::ffff:127.0.0.1", false, "IPv4-mapped 127.0.0.1: loopback (127.0.0.0/8)"},
		{"::7f00:1", false, "IPv4-compatible (deprecated) (::/96)"},
		{"::808:808", false, "IPv4-compatible (deprecated) (::/96)"},
		{"::ffff:0:7f00:1", false, "IPv4-translated (SIIT) (::ffff:0:0:0/96)"},
		{"::1:0:0:1", true, ""},
		{"64:ff9b::7f00:1", false, "NAT64 (64:ff9b::/96) embeds 127.0.0.1: loopback (127.0.0.0/8)"},
		{"64:ff9b:1::7f00:1", false, "local-use NAT64 (64:ff9b:1::/48, /96 layout) embeds 127.0.0.1: loopback"},
		{"64:ff9b:1:7f00:0:100::", false, "local-use NAT64 (64:ff9b:1::/48, /48 layout) embeds 127.0.0.1: loopback"},
		{"2002:7f00:1::", false, "6to4 (2002::/16) embeds 127.0.0.1: loopback"},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", false, "Teredo (2001::/32) embeds client 127.0.0.1: loopback"},

		{"::ffff:10.0.0.1", false, "IPv4-mapped 10.0.0.1: private (10.0.0.0/8)"},
		{"64:ff9b::a00:1", false, "NAT64 (64:ff9b::/96) embeds 10.0.0.1: private (10.0.0.0/8)"},
		{"64:ff9b:1::a00:1", false, "local-use NAT64 (64:ff9b:1::/48, /96 layout) embeds 10.0.0.1: private"},
		{"64:ff9b:1:a00:0:100::", false, "/48 layout) embeds 10.0.0.1: private"},
		{"2002:a00:1::", false, "6to4 (2002::/16) embeds 10.0.0.1: private (10.0.0.0/8)"},
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", false, "Teredo (2001::/32) embeds client 10.0.0.1: private"},

		{"::ffff:169.254.169.254", false, "IPv4-mapped 169.254.169.254: cloud metadata endpoint"},
		{"64:ff9b::a9fe:a9fe", false, "NAT64 (64:ff9b::/96) embeds 169.254.169.254: cloud metadata endpoint"},
		{"64:ff9b:1::a9fe:a9fe", false, "embeds 169.254.169.254: cloud metadata endpoint"},
		{"64:ff9b:1:a9fe:a9:fe00::", false, "/48 layout) embeds 169.254.169.254"},
		{"2002:a9fe:a9fe::", false, "6to4 (2002::/16) embeds 169.254.169.254: cloud metadata endpoint"},
		{"2001:0:4136:e378:8000:63bf:5601:5601", false, "Teredo (2001::/32) embeds client 169.254.169.254"},
		{"::ffff:168.63.129.16", false, "IPv4-mapped 168.63.129.16: cloud platform endpoint (Azure WireServer)"},
		{"64:ff9b::a83f:8110", false, "NAT64 (64:ff9b::/96) embeds 168.63.129.16: cloud platform endpoint"},
		{"2002:a83f:8110::", false, "6to4 (2002::/16) embeds 168.63.129.16: cloud platform endpoint"},

		{"64:ff9b:1:120a:0:1::", false, "(64:ff9b:1::/48, /56 layout) embeds 10.0.0.1: private"},
		{"64:ff9b:1:1234:a:0:100:0", false, "(64:ff9b:1::/48, /64 layout) embeds 10.0.0.1: private"},
		{"2001:0:a00:1:8000:63bf:f7f7:f7f7", false, "Teredo (2001::/32) embeds server 10.0.0.1: private"},
		// Public embedded addresses: refused by the transition range itself.
		{"::ffff:8.8.8.8", true, ""},
		{"64:ff9b::808:808", false, "NAT64 (64:ff9b::/96)"},
		{"2002:808:808::", false, "6to4 (2002::/16)"},
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", false, "IETF protocol assignments (2001::/23)"},
	})
	t.Run("public embedded address is not blamed", func(t *testing.T) {
		_, reason := p.CheckAddr(netip.MustParseAddr("64:ff9b::808:808"))
		if strings.Contains(reason, "embeds") {
			t.Errorf("reason %q names the embedded 8.8.8.8, which is allowed", reason)
		}
	})
	t.Run("zone is ignored", func(t *testing.T) {
		if ok, _ := p.CheckAddr(netip.MustParseAddr("fe80::1%eth0")); ok {
			t.Errorf("%s allowed", "fe80::1%eth0")
		}
	})
	t.Run("invalid address is refused", func(t *testing.T) {
		if ok, reason := p.CheckAddr(netip.Addr{}); ok || reason != "invalid address" {
			t.Errorf("zero Addr: %v %q", ok, reason)
		}
	})
}

func TestAddressPolicyFlagsInteract(t *testing.T) {
	tests := []struct {
		name                 string
		cluster, deny, allow []string
		cases                []addrCase
	}{
		{
			name:  "allow lifts a special-purpose range",
			allow: []string{"10.0.0.0/8"},
			cases: []addrCase{{"10.1.2.3", true, ""}, {"11.0.0.1", true, ""}, {"172.16.0.1", false, "private (172.16.0.0/12)"}},
		},
		{
			name:  "allow of one address inside a special-purpose range",
			allow: []string{"10.1.2.3/32"},
			cases: []addrCase{{"10.1.2.3", true, ""}, {"10.1.2.4", false, "private (10.0.0.0/8)"}, {"10.1.2.2", false, "private"}},
		},
		{
			name:  "allow inside a deny CIDR wins (more specific)",
			deny:  []string{"8.8.0.0/16"},
			allow: []string{"8.8.8.0/24"},
			cases: []addrCase{{"8.8.8.8", true, ""}, {"8.8.4.4", false, "denied CIDR (8.8.0.0/16)"}, {"8.9.0.0", true, ""}, {"8.7.255.255", true, ""}},
		},
		{
			name:  "deny inside an allow CIDR wins (more specific)",
			deny:  []string{"10.1.0.0/16"},
			allow: []string{"10.0.0.0/8"},
			cases: []addrCase{{"10.1.0.1", false, "denied CIDR (10.1.0.0/16), more specific than the --allow-cidr exception"}, {"10.2.0.1", true, ""}, {"10.0.255.255", true, ""}, {"10.1.255.255", false, "denied CIDR"}},
		},
		{
			name:    "cluster CIDR inside an allow CIDR stays refused",
			cluster: []string{"10.96.0.0/12", "10.244.0.0/16"},
			allow:   []string{"10.0.0.0/8"},
			cases:   []addrCase{{"10.96.0.1", false, "cluster CIDR (10.96.0.0/12)"}, {"10.95.255.255", true, ""}, {"10.112.0.0", true, ""}, {"10.244.1.5", false, "cluster CIDR (10.244.0.0/16)"}},
		},
		{
			name:    "one address allowed inside a cluster CIDR",
			cluster: []string{"10.96.0.0/12"},
			allow:   []string{"10.96.0.10/32"},
			cases:   []addrCase{{"10.96.0.10", true, ""}, {"10.96.0.11", false, "cluster CIDR (10.96.0.0/12)"}},
		},
		{
			name:    "cluster CIDR reason beats the wider private range",
			cluster: []string{"10.96.0.0/12"},
			cases:   []addrCase{{"10.96.0.1", false, "cluster CIDR (10.96.0.0/12)"}, {"10.95.0.1", false, "private (10.0.0.0/8)"}},
		},
		{
			name:    "cluster CIDR in public space, IPv4 and IPv6",
			cluster: []string{"11.0.0.0/16", "2600:1f00::/64"},
			cases:   []addrCase{{"11.0.0.1", false, "cluster CIDR (11.0.0.0/16)"}, {"11.1.0.0", true, ""}, {"2600:1f00::1", false, "cluster CIDR (2600:1f00::/64)"}, {"2600:1f00:0:1::", true, ""}, {"::ffff:11.0.0.1", false, "IPv4-mapped 11.0.0.1: cluster CIDR"}},
		},
		{
			name:  "deny CIDR in public space",
			deny:  []string{"93.184.216.0/24", "2606:2800::/32"},
			cases: []addrCase{{"93.184.216.34", false, "denied CIDR (93.184.216.0/24)"}, {"93.184.217.0", true, ""}, {"2606:2800:220:1::", false, "denied CIDR (2606:2800::/32)"}},
		},
		{
			name:  "IPv4 allow covers the IPv4-mapped form",
			allow: []string{"10.0.0.0/8"},
			cases: []addrCase{{"::ffff:10.0.0.1", true, ""}},
		},
		{
			name:  "IPv4-mapped allow CIDR is taken as IPv4",
			allow: []string{"::ffff:10.0.0.0/104"},
			cases: []addrCase{{"10.0.0.1", true, ""}, {"11.0.0.1", true, ""}, {"172.16.0.1", false, "private"}},
		},
		{
			name:  "allowing NAT64 still checks the embedded IPv4",
			allow: []string{"64:ff9b::/96"},
			cases: []addrCase{{"64:ff9b::808:808", true, ""}, {"64:ff9b::a00:1", false, "NAT64 (64:ff9b::/96) embeds 10.0.0.1: private"}, {"64:ff9b::a9fe:a9fe", false, "embeds 169.254.169.254"}},
		},
		{
			name:  "allowing NAT64 and the embedded range reaches it",
			allow: []string{"64:ff9b::/96", "10.0.0.0/8"},
			cases: []addrCase{{"64:ff9b::a00:1", true, ""}, {"64:ff9b::c0a8:1", false, "embeds 192.168.0.1: private (192.168.0.0/16)"}},
		},
		{
			name:  "allowing the IPv4 range does not open its NAT64 form",
			allow: []string{"10.0.0.0/8"},
			cases: []addrCase{{"64:ff9b::a00:1", false, "NAT64 (64:ff9b::/96)"}, {"2002:a00:1::", false, "6to4 (2002::/16)"}},
		},
		{
			name:  "allowing local-use NAT64 checks every layout the address fits",
			allow: []string{"64:ff9b:1::/48"},
			cases: []addrCase{
				{"64:ff9b:1::808:808", true, ""},
				{"64:ff9b:1:abcd::808:808", true, ""},
				{"64:ff9b:1::a00:1", false, "/96 layout) embeds 10.0.0.1: private"},
				// A /48-layout address reads as 0.0.0.0 in the /96 layout: refused (fail closed).
				{"64:ff9b:1:808:8:800::", false, "/96 layout) embeds 0.0.0.0"},
			},
		},
		{
			name:  "allowing 6to4 still checks the embedded IPv4",
			allow: []string{"2002::/16"},
			cases: []addrCase{{"2002:808:808::1", true, ""}, {"2002:7f00:1::", false, "6to4 (2002::/16) embeds 127.0.0.1: loopback"}},
		},
		{
			name:  "allowing Teredo still checks client and server",
			allow: []string{"2001::/32"},
			cases: []addrCase{{"2001:0:808:808:8000:63bf:f7f7:f7f7", true, ""}, {"2001:0:808:808:8000:63bf:f5ff:fffe", false, "embeds client 10.0.0.1"}, {"2001:0:a00:1:8000:63bf:f7f7:f7f7", false, "embeds server 10.0.0.1"}},
		},
		{
			name:    "allow everything still keeps more specific operator denies",
			cluster: []string{"10.96.0.0/12"},
			deny:    []string{"8.8.8.8/32"},
			allow:   []string{"0.0.0.0/0"},
			cases:   []addrCase{{"127.0.0.1", true, ""}, {"10.96.0.1", false, "cluster CIDR"}, {"8.8.8.8", false, "denied CIDR (8.8.8.8/32)"}, {"::1", false, "loopback"}},
		},
		{
			name:  "an IPv6 deny of everything does not cover IPv4-mapped addresses",
			deny:  []string{"::/0"},
			cases: []addrCase{{"2606:4700::1", false, "denied CIDR (::/0)"}, {"::ffff:8.8.8.8", true, ""}, {"8.8.8.8", true, ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runAddrCases(t, mustAddrPolicy(t, tt.cluster, tt.deny, tt.allow), tt.cases)
		})
	}
}

func TestNewAddressPolicyErrors(t *testing.T) {
	tests := []struct {
		name                 string
		cluster, deny, allow []string
		wantErr              string
	}{
		{"prefix length too long", nil, nil, []string{"10.0.0.0/33"}, `--allow-cidr "10.0.0.0/33": invalid CIDR`},
		{"not a CIDR", nil, []string{"banana"}, nil, `--deny-cidr "banana": invalid CIDR`},
		{"address without a length", []string{"10.96.0.1"}, nil, nil, `--cluster-cidr "10.96.0.1": invalid CIDR: no prefix length (for one address use 10.96.0.1/32)`},
		{"host bits set", nil, nil, []string{"10.0.0.1/8"}, `--allow-cidr "10.0.0.1/8": invalid CIDR: host bits set (the network is 10.0.0.0/8; for one address use 10.0.0.1/32)`},
		{"IPv6 host bits set", nil, []string{"2001:db8::1/32"}, nil, `--deny-cidr "2001:db8::1/32": invalid CIDR: host bits set`},
		{"zone in a CIDR", nil, []string{"fe80::%eth0/64"}, nil, `--deny-cidr "fe80::%eth0/64": invalid CIDR`},
		{"same range allowed and denied", nil, []string{"8.8.8.0/24"}, []string{"8.8.8.0/24"}, `--allow-cidr "8.8.8.0/24": the same range is given to --deny-cidr`},
		{"same range allowed and in the cluster", []string{"10.96.0.0/12"}, nil, []string{"10.96.0.0/12"}, `the same range is given to --cluster-cidr`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewAddressPolicy(tt.cluster, tt.deny, tt.allow)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	t.Run("every bad value is reported", func(t *testing.T) {
		_, err := NewAddressPolicy([]string{"x"}, []string{"y"}, []string{"z"})
		for _, want := range []string{`--cluster-cidr "x"`, `--deny-cidr "y"`, `--allow-cidr "z"`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v does not mention %s", err, want)
			}
		}
	})
}

func TestAddressPolicyCategories(t *testing.T) {
	p := mustAddrPolicy(t, []string{"11.0.0.0/8"}, []string{"12.0.0.0/8"}, nil)
	tests := []struct{ addr, want string }{
		{"10.0.0.1", CategoryPrivate}, {"127.0.0.1", CategoryLoopback}, {"169.254.1.1", CategoryLinkLocal},
		{"169.254.169.254", CategoryMetadata}, {"100.64.0.1", CategoryShared}, {"0.1.2.3", CategoryThisNetwork},
		{"192.0.0.8", CategorySpecialPurpose}, {"192.0.2.1", CategoryDocumentation}, {"198.18.0.1", CategoryBenchmarking},
		{"224.0.0.1", CategoryMulticast}, {"240.0.0.1", CategoryReserved}, {"::", CategoryUnspecified},
		{"64:ff9b::808:808", CategoryNAT64}, {"100::1", CategoryDiscard}, {"2002:808:808::", Category6to4},
		{"fd00::1", CategoryUniqueLocal}, {"fec0::1", CategorySiteLocal}, {"11.1.1.1", CategoryClusterCIDR},
		{"12.1.1.1", CategoryDeniedCIDR}, {"64:ff9b::a00:1", CategoryPrivate}, {"::ffff:127.0.0.1", CategoryLoopback},
	}
	for _, tt := range tests {
		if v := p.Check(netip.MustParseAddr(tt.addr)); v.OK || v.Category != tt.want {
			t.Errorf("Check(%s) = %+v, want refused with category %q", tt.addr, v, tt.want)
		}
	}
	if v := p.Check(netip.MustParseAddr("8.8.8.8")); !v.OK || v.Category != "" || v.Reason != "" {
		t.Errorf("Check(8.8.8.8) = %+v, want allowed with no category or reason", v)
	}
}

// naiveRange is an independent model of a refused or allowed range: inclusive bounds
// over 16-byte addresses, IPv4 held in its IPv4-mapped form.
type naiveRange struct {
	lo, hi   [16]byte
	bits     int // in the 128-bit space
	v4       bool
	operator bool
}

// The special-purpose list of the README's "The DNS trust guard", plus the IPv4-compatible and SIIT forms, written out
// again for the model.
var naiveSpecialPurpose = []string{
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
	"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
	"::/128", "::1/128", "::/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
	"2002::/16", "3fff::/20", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
}

func naiveRangeOf(t testing.TB, cidr string, operator bool) naiveRange {
	pfx, err := netip.ParsePrefix(cidr)
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	r := naiveRange{bits: pfx.Bits(), operator: operator}
	var base [16]byte
	if pfx.Addr().Is4() || pfx.Addr().Is4In6() && pfx.Bits() >= 96 {
		a4 := pfx.Addr().Unmap().As4()
		copy(base[:], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
		copy(base[12:], a4[:])
		r.v4 = true
		if pfx.Addr().Is4() {
			r.bits += 96
		}
	} else {
		base = pfx.Addr().As16()
	}
	for i := 0; i < 16; i++ {
		keep := min(max(r.bits-8*i, 0), 8)
		mask := byte(0xff << (8 - keep))
		if keep == 0 {
			mask = 0
		}
		r.lo[i] = base[i] & mask
		r.hi[i] = base[i] | ^mask
	}
	return r
}

func (r naiveRange) contains(x [16]byte) bool {
	isV4 := bytes.Equal(x[:12], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
	if isV4 != r.v4 {
		return false
	}
	return bytes.Compare(x[:], r.lo[:]) >= 0 && bytes.Compare(x[:], r.hi[:]) <= 0
}

func mapped(a, b, c, d byte) [16]byte {
	return [16]byte{10: 0xff, 11: 0xff, 12: a, 13: b, 14: c, 15: d}
}

// naiveEmbedded extracts IPv4 addresses by byte positions (RFC 6052, 3056, 4380).
func naiveEmbedded(x [16]byte) [][16]byte {
	switch {
	case bytes.Equal(x[:12], []byte{0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0}):
		return [][16]byte{mapped(x[12], x[13], x[14], x[15])}
	case bytes.Equal(x[:6], []byte{0, 0x64, 0xff, 0x9b, 0, 1}):
		out := [][16]byte{mapped(x[12], x[13], x[14], x[15])} // a /96 prefix
		zeroFrom := func(i int) bool { return x[8] == 0 && bytes.Count(x[i:], []byte{0}) == 16-i }
		if zeroFrom(11) { // a /48 prefix: octets 6, 7, 9, 10
			out = append(out, mapped(x[6], x[7], x[9], x[10]))
		}
		if zeroFrom(12) { // a /56 prefix
			out = append(out, mapped(x[7], x[9], x[10], x[11]))
		}
		if zeroFrom(13) { // a /64 prefix
			out = append(out, mapped(x[9], x[10], x[11], x[12]))
		}
		return out
	case x[0] == 0x20 && x[1] == 0x02:
		return [][16]byte{mapped(x[2], x[3], x[4], x[5])}
	case bytes.Equal(x[:4], []byte{0x20, 0x01, 0, 0}):
		return [][16]byte{mapped(x[12]^0xff, x[13]^0xff, x[14]^0xff, x[15]^0xff), mapped(x[4], x[5], x[6], x[7])}
	}
	return nil
}

type naivePolicy struct{ deny, allow []naiveRange }

func (p naivePolicy) allowedOne(x [16]byte) bool {
	best := -1
	for _, a := range p.allow {
		if a.contains(x) && a.bits > best {
			best = a.bits
		}
	}
	for _, d := range p.deny {
		if d.contains(x) && (best < 0 || d.operator && d.bits >= best) {
			return false
		}
	}
	return true
}

func (p naivePolicy) allowed(x [16]byte) bool {
	if !p.allowedOne(x) {
		return false
	}
	for _, e := range naiveEmbedded(x) {
		if !p.allowedOne(e) {
			return false
		}
	}
	return true
}

func FuzzAddressPolicy(f *testing.F) {
	seed := func(addr string, allow string, allowBits uint8, deny string, denyBits uint8) {
		f.Add(netip.MustParseAddr(addr).AsSlice(), netip.MustParseAddr(allow).AsSlice(), allowBits, netip.MustParseAddr(deny).AsSlice(), denyBits)
	}
	seed("10.0.0.1", "10.0.0.0", 8, "10.1.0.0", 16)
	seed("10.1.0.1", "10.0.0.0", 8, "10.1.0.0", 16)
	seed("::ffff:10.0.0.1", "10.0.0.0", 8, "8.8.8.0", 24)
	seed("64:ff9b::a00:1", "64:ff9b::", 96, "8.8.8.0", 24)
	seed("64:ff9b::a00:1", "10.0.0.0", 8, "8.8.8.0", 24)
	seed("64:ff9b:1:a00:0:100::", "64:ff9b:1::", 48, "1.2.3.0", 24)
	seed("2002:7f00:1::", "2002::", 16, "1.2.3.0", 24)
	seed("2001:0:4136:e378:8000:63bf:f5ff:fffe", "2001::", 32, "1.2.3.0", 24)
	seed("8.8.8.8", "0.0.0.0", 0, "8.8.8.8", 32)
	seed("169.254.169.254", "169.254.0.0", 16, "::", 0)
	seed("fe80::1", "fe80::", 10, "fe80::", 64)
	seed("2606:4700::1111", "2606:4700::", 32, "2606:4700::", 48)
	seed("100.64.0.0", "100.64.0.0", 10, "100.64.0.0", 12)

	model := func(allow, deny []string) naivePolicy {
		var p naivePolicy
		for _, c := range naiveSpecialPurpose {
			p.deny = append(p.deny, naiveRangeOf(f, c, false))
		}
		for _, c := range deny {
			p.deny = append(p.deny, naiveRangeOf(f, c, true))
		}
		for _, c := range allow {
			p.allow = append(p.allow, naiveRangeOf(f, c, false))
		}
		return p
	}
	f.Fuzz(func(t *testing.T, addrB, allowB []byte, allowBits uint8, denyB []byte, denyBits uint8) {
		addr, ok := netip.AddrFromSlice(addrB)
		if !ok {
			return
		}
		allow, deny := fuzzCIDR(allowB, allowBits), fuzzCIDR(denyB, denyBits)
		p, err := NewAddressPolicy(nil, deny, allow)
		if err != nil {
			return // the same range allowed and denied is a config error
		}
		v := p.Check(addr)
		x := addr.As16()
		if want := model(allow, deny).allowed(x); v.OK != want {
			t.Fatalf("Check(%s) with allow %v deny %v = %+v; the model says allowed=%v", addr, allow, deny, v, want)
		}
		if v.OK != (v.Reason == "") || v.OK != (v.Category == "") {
			t.Fatalf("Check(%s) = %+v: a refusal needs a reason and category, an allowance neither", addr, v)
		}
		// Without exceptions, no allowed address lies in a listed range.
		if ok, _ := mustAddrPolicy(t, nil, nil, nil).CheckAddr(addr); ok {
			for _, c := range naiveSpecialPurpose {
				if naiveRangeOf(t, c, false).contains(x) {
					t.Fatalf("%s allowed but inside %s", addr, c)
				}
			}
		}
	})
}

func fuzzCIDR(b []byte, bits uint8) []string {
	a, ok := netip.AddrFromSlice(b)
	if !ok {
		return nil
	}
	pfx, err := a.Prefix(int(bits))
	if err != nil {
		return nil
	}
	return []string{pfx.String()}
}
