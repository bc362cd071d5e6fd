package egress

import "net/netip"

// EmbeddedIPv4 is an IPv4 address carried inside an IPv6 address by a transition
// mechanism; traffic to the IPv6 address ends up at the IPv4 one. Both the DNS guard and
// the translator's endpoint policy look inside, so it lives here.
type EmbeddedIPv4 struct {
	Addr netip.Addr
	Via  string // e.g. "NAT64 (64:ff9b::/96) embeds"
}

var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	nat64LocalUse  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
)

// EmbeddedIPv4s returns the IPv4 addresses embedded in a (an IPv6 address that is not
// IPv4-mapped): NAT64 (RFC 6052), 6to4 (RFC 3056) and Teredo (RFC 4380: the server, and
// the client obfuscated by XOR with 0xffffffff). Every address returned must pass.
func EmbeddedIPv4s(a netip.Addr) []EmbeddedIPv4 {
	if !a.Is6() || a.Is4In6() {
		return nil
	}
	b := a.As16()
	v4 := func(p0, p1, p2, p3 byte) netip.Addr { return netip.AddrFrom4([4]byte{p0, p1, p2, p3}) }
	switch {
	case nat64WellKnown.Contains(a):
		return []EmbeddedIPv4{{v4(b[12], b[13], b[14], b[15]), "NAT64 (64:ff9b::/96) embeds"}}
	case nat64LocalUse.Contains(a):
		return localUseNAT64(b)
	case sixToFour.Contains(a):
		return []EmbeddedIPv4{{v4(b[2], b[3], b[4], b[5]), "6to4 (2002::/16) embeds"}}
	case teredo.Contains(a):
		return []EmbeddedIPv4{
			{v4(^b[12], ^b[13], ^b[14], ^b[15]), "Teredo (2001::/32) embeds client"},
			{v4(b[4], b[5], b[6], b[7]), "Teredo (2001::/32) embeds server"},
		}
	}
	return nil
}

// localUseNAT64 returns the candidate IPv4 addresses of an address in 64:ff9b:1::/48.
// The operator may use any RFC 6052 prefix length inside the /48, and the address does
// not say which, so every layout the address is consistent with is a candidate: the
// /96 layout always, and the /48, /56 and /64 layouts when the reserved octet 8 and
// that layout's suffix are zero. The most constrained layout comes first, so a reason
// names the likeliest reading.
func localUseNAT64(b [16]byte) []EmbeddedIPv4 {
	v4 := func(i, j, k, l int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]}) }
	zero := func(from int) bool {
		for _, x := range b[from:] {
			if x != 0 {
				return false
			}
		}
		return true
	}
	const via = "local-use NAT64 (64:ff9b:1::/48"
	var out []EmbeddedIPv4
	if b[8] == 0 && zero(11) {
		out = append(out, EmbeddedIPv4{v4(6, 7, 9, 10), via + ", /48 layout) embeds"})
	}
	if b[8] == 0 && zero(12) {
		out = append(out, EmbeddedIPv4{v4(7, 9, 10, 11), via + ", /56 layout) embeds"})
	}
	if b[8] == 0 && zero(13) {
		out = append(out, EmbeddedIPv4{v4(9, 10, 11, 12), via + ", /64 layout) embeds"})
	}
	return append(out, EmbeddedIPv4{v4(12, 13, 14, 15), via + ", /96 layout) embeds"})
}
