package dnsguard

import "net/netip"

// The bounded categories of refused addresses: the reason label of
// portcullis_dns_blocked_answers_total.
const (
	CategoryThisNetwork    = "this-network"
	CategoryPrivate        = "private"
	CategoryShared         = "shared"
	CategoryLoopback       = "loopback"
	CategoryLinkLocal      = "link-local"
	CategoryMetadata       = "metadata"
	CategorySpecialPurpose = "special-purpose"
	CategoryDocumentation  = "documentation"
	CategoryBenchmarking   = "benchmarking"
	CategoryMulticast      = "multicast"
	CategoryReserved       = "reserved"
	CategoryUnspecified    = "unspecified"
	CategoryNAT64          = "nat64"
	CategoryDiscard        = "discard"
	Category6to4           = "6to4"
	CategoryUniqueLocal    = "unique-local"
	CategorySiteLocal      = "site-local"
	CategoryClusterCIDR    = "cluster-cidr"
	CategoryDeniedCIDR     = "denied-cidr"
	CategoryInvalid        = "invalid"
)

// deniedRange is one refused prefix and how to explain it.
type deniedRange struct {
	prefix   netip.Prefix
	label    string // e.g. "private"; the reason is label + " (" + prefix + ")"
	category string
	operator bool // from --cluster-cidr or --deny-cidr: a more specific allow CIDR beats it
}

// specialPurposeRanges are the IANA special-purpose ranges the README's "The DNS trust guard" lists,
// plus the well-known cloud metadata endpoints. Most of those only sharpen the reason
// for an address a listed range already covers (169.254.169.254, 100.100.100.200,
// fd00:ec2::254); Azure's WireServer, 168.63.129.16, is public address space and is
// refused only by its own entry.
var specialPurposeRanges = []deniedRange{
	// IPv4
	builtin("0.0.0.0/8", `"this network"`, CategoryThisNetwork),
	builtin("10.0.0.0/8", "private", CategoryPrivate),
	builtin("100.64.0.0/10", "shared address space (CGNAT)", CategoryShared),
	builtin("100.100.100.200/32", "cloud metadata endpoint in shared address space", CategoryMetadata),
	builtin("127.0.0.0/8", "loopback", CategoryLoopback),
	builtin("169.254.0.0/16", "link-local", CategoryLinkLocal),
	builtin("169.254.169.254/32", "cloud metadata endpoint in link-local", CategoryMetadata),
	builtin("168.63.129.16/32", "cloud platform endpoint (Azure WireServer)", CategoryMetadata),
	builtin("172.16.0.0/12", "private", CategoryPrivate),
	builtin("192.0.0.0/24", "IETF protocol assignments", CategorySpecialPurpose),
	builtin("192.0.2.0/24", "documentation (TEST-NET-1)", CategoryDocumentation),
	builtin("192.88.99.0/24", "6to4 relay anycast", CategorySpecialPurpose),
	builtin("192.168.0.0/16", "private", CategoryPrivate),
	builtin("198.18.0.0/15", "benchmarking", CategoryBenchmarking),
	builtin("198.51.100.0/24", "documentation (TEST-NET-2)", CategoryDocumentation),
	builtin("203.0.113.0/24", "documentation (TEST-NET-3)", CategoryDocumentation),
	builtin("224.0.0.0/4", "multicast", CategoryMulticast),
	builtin("240.0.0.0/4", "reserved", CategoryReserved),
	// IPv6
	builtin("::/128", "unspecified", CategoryUnspecified),
	builtin("::1/128", "loopback", CategoryLoopback),
	// Deprecated IPv4-compatible (RFC 4291) and SIIT IPv4-translated (RFC 6145) forms: not
	// in the IANA registry, but they embed an IPv4 address that some stacks may honour;
	// unknown means refused.
	builtin("::/96", "IPv4-compatible (deprecated)", CategoryReserved),
	builtin("::ffff:0:0:0/96", "IPv4-translated (SIIT)", CategoryReserved),
	builtin("64:ff9b::/96", "NAT64", CategoryNAT64),
	builtin("64:ff9b:1::/48", "local-use NAT64", CategoryNAT64),
	builtin("100::/64", "discard-only", CategoryDiscard),
	builtin("2001::/23", "IETF protocol assignments", CategorySpecialPurpose),
	builtin("2001:db8::/32", "documentation", CategoryDocumentation),
	builtin("2002::/16", "6to4", Category6to4),
	builtin("3fff::/20", "documentation", CategoryDocumentation),
	builtin("fc00::/7", "unique local", CategoryUniqueLocal),
	builtin("fd00:ec2::254/128", "cloud metadata endpoint in unique local", CategoryMetadata),
	builtin("fe80::/10", "link-local", CategoryLinkLocal),
	builtin("fec0::/10", "site-local (deprecated)", CategorySiteLocal),
	builtin("ff00::/8", "multicast", CategoryMulticast),
}

func builtin(cidr, label, category string) deniedRange {
	return deniedRange{prefix: netip.MustParsePrefix(cidr), label: label, category: category}
}

func (r deniedRange) reason() string {
	return r.label + " (" + r.prefix.String() + ")"
}
