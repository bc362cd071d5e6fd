package dnsguard

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/portcullis-io/portcullis/egress"
)

// AddressPolicy decides which addresses Envoy may connect to. It implements
// egress.AddressPolicy, is compiled once and is safe for concurrent use.
//
// An address is refused when a denied range covers it: the IANA special-purpose ranges
// listed in ranges.go (and in the README's "The DNS trust guard"), the cluster CIDRs and the admin's deny CIDRs. An allow CIDR
// covering the address lifts a special-purpose range; it lifts a cluster or deny CIDR
// only when the allow CIDR is the more specific prefix (so "allow 10.0.0.0/8" does not
// open a cluster CIDR inside it, while "allow 10.96.0.10/32" does). An IPv4-mapped IPv6
// address is checked as IPv4, and the IPv4 address inside a NAT64, 6to4 or Teredo
// address must pass too.
type AddressPolicy struct {
	deny  []deniedRange // most specific first
	allow []netip.Prefix
}

var _ egress.AddressPolicy = (*AddressPolicy)(nil)

// Verdict is the policy's decision on one address.
type Verdict struct {
	OK bool
	// Reason names the range that refused the address, e.g. "private (10.0.0.0/8)".
	Reason string
	// Category is a bounded label for metrics, e.g. "private"; empty when OK.
	Category string
}

// NewAddressPolicy compiles the policy from CIDR strings (the flags' values). An
// IPv4-mapped IPv6 CIDR of /96 or longer is taken as the IPv4 CIDR it maps.
func NewAddressPolicy(clusterCIDRs, denyCIDRs, allowCIDRs []string) (*AddressPolicy, error) {
	p := &AddressPolicy{deny: append([]deniedRange(nil), specialPurposeRanges...)}
	var errs []error
	operator := map[netip.Prefix]string{}
	addDeny := func(flagName, label, category string, values []string) {
		for _, raw := range values {
			pfx, err := parseCIDR(raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("--%s %q: %w", flagName, raw, err))
				continue
			}
			if _, dup := operator[pfx]; dup {
				continue
			}
			operator[pfx] = flagName
			p.deny = append(p.deny, deniedRange{prefix: pfx, label: label, category: category, operator: true})
		}
	}
	addDeny("cluster-cidr", "cluster CIDR", CategoryClusterCIDR, clusterCIDRs)
	addDeny("deny-cidr", "denied CIDR", CategoryDeniedCIDR, denyCIDRs)
	seenAllow := map[netip.Prefix]bool{}
	for _, raw := range allowCIDRs {
		pfx, err := parseCIDR(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("--allow-cidr %q: %w", raw, err))
			continue
		}
		if flagName, clash := operator[pfx]; clash {
			errs = append(errs, fmt.Errorf("--allow-cidr %q: the same range is given to --%s; remove one of them", raw, flagName))
			continue
		}
		if !seenAllow[pfx] {
			seenAllow[pfx] = true
			p.allow = append(p.allow, pfx)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.SliceStable(p.deny, func(i, j int) bool { return p.deny[i].prefix.Bits() > p.deny[j].prefix.Bits() })
	return p, nil
}

// CheckAddr implements egress.AddressPolicy.
func (p *AddressPolicy) CheckAddr(a netip.Addr) (ok bool, reason string) {
	v := p.Check(a)
	return v.OK, v.Reason
}

// Check decides on a and explains a refusal. When both an embedded IPv4 address and
// the IPv6 address around it are refused, the reason names the embedded address.
func (p *AddressPolicy) Check(a netip.Addr) Verdict {
	if !a.IsValid() {
		return Verdict{Reason: "invalid address", Category: CategoryInvalid}
	}
	a = a.WithZone("")
	x := a.Unmap()
	for _, e := range egress.EmbeddedIPv4s(x) {
		if v := p.checkOne(e.Addr); !v.OK {
			v.Reason = e.Via + " " + e.Addr.String() + ": " + v.Reason
			return v
		}
	}
	v := p.checkOne(x)
	if !v.OK && a.Is4In6() {
		v.Reason = "IPv4-mapped " + x.String() + ": " + v.Reason
	}
	return v
}

func (p *AddressPolicy) checkOne(x netip.Addr) Verdict {
	allowBits := -1
	for _, pfx := range p.allow {
		if pfx.Bits() > allowBits && pfx.Contains(x) {
			allowBits = pfx.Bits()
		}
	}
	for _, d := range p.deny {
		if !d.prefix.Contains(x) {
			continue
		}
		if allowBits < 0 {
			return Verdict{Reason: d.reason(), Category: d.category}
		}
		if d.operator && d.prefix.Bits() >= allowBits {
			return Verdict{Reason: d.reason() + ", more specific than the --allow-cidr exception", Category: d.category}
		}
	}
	return Verdict{OK: true}
}

// parseCIDR parses a canonical CIDR: host bits set is an error, since it usually means
// the operator meant a different (often narrower) range.
func parseCIDR(raw string) (netip.Prefix, error) {
	s := strings.TrimSpace(raw)
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		if a, aerr := netip.ParseAddr(s); aerr == nil {
			return netip.Prefix{}, fmt.Errorf("invalid CIDR: no prefix length (for one address use %s/%d)", a, a.BitLen())
		}
		return netip.Prefix{}, errors.New("invalid CIDR")
	}
	if m := pfx.Masked(); m != pfx {
		return netip.Prefix{}, fmt.Errorf("invalid CIDR: host bits set (the network is %s; for one address use %s/%d)", m, pfx.Addr(), pfx.Addr().BitLen())
	}
	if pfx.Addr().Is4In6() && pfx.Bits() >= 96 {
		pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
	}
	return pfx, nil
}
