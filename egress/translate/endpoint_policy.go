package translate

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// Service endpoints come from EndpointSlices, which anyone who may write one in a
// namespace controls: a hand-made slice can point a Service at the Envoy pod's own
// loopback, its node's link-local services or the cloud metadata endpoint. Envoy
// connects from inside the gateway, with the gateway's network identity, so such an
// endpoint is refused like the same address would be for an IP Backend.

// hostRange is a range no Service endpoint may be in, whatever the configuration.
type hostRange struct {
	prefix netip.Prefix
	label  string
}

// alwaysRefusedEndpoints are the addresses that reach the gateway's own host or cloud
// control planes rather than a workload: "this network" (0.0.0.0/8, with the
// unspecified address), loopback, link-local and the cloud metadata endpoints (AWS, GCP
// and Azure 169.254.169.254, Alibaba 100.100.100.200, Azure's WireServer 168.63.129.16,
// AWS's IPv6 fd00:ec2::254). Most specific first, so a reason names the metadata
// endpoint rather than the link-local range around it.
var alwaysRefusedEndpoints = []hostRange{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata endpoint"},
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata endpoint"},
	{netip.MustParsePrefix("168.63.129.16/32"), "cloud platform endpoint (Azure WireServer)"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata endpoint"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
}

// ipv4Compatible holds the deprecated IPv4-compatible (::a.b.c.d) and SIIT
// IPv4-translated (::ffff:0:a.b.c.d) forms, whose last four bytes are an IPv4 address.
var ipv4Compatible = []netip.Prefix{netip.MustParsePrefix("::/96"), netip.MustParsePrefix("::ffff:0:0:0/96")}

// checkEndpoint decides whether a Service endpoint address may reach Envoy, and why not.
//
// The always-refused ranges apply whatever the configuration, to the address and to any
// IPv4 address it embeds (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo). Beyond
// them, when Options.ClusterCIDRs is set, an endpoint must be inside a cluster CIDR or
// pass the DNS guard's address policy (so a private address outside the pod and service
// ranges is refused, and --allow-cidr can admit one). When no cluster CIDR is
// configured the translator cannot tell pods from anything else on a private network,
// so private endpoints stay allowed.
func (t *translator) checkEndpoint(raw string) (ok bool, reason string) {
	a, err := netip.ParseAddr(raw)
	if err != nil || a.Zone() != "" {
		return false, "not an IP address"
	}
	a = a.Unmap()
	if t.opts.AllowLoopbackEndpoints && a.IsLoopback() {
		return true, ""
	}
	if reason := alwaysRefused(a); reason != "" {
		return false, reason
	}
	if len(t.opts.ClusterCIDRs) == 0 || slices.ContainsFunc(t.opts.ClusterCIDRs, func(p netip.Prefix) bool { return p.Contains(a) }) {
		return true, ""
	}
	if t.opts.AddressPolicy == nil {
		return false, "outside the cluster CIDRs, and no address policy is configured"
	}
	if ok, reason := t.opts.AddressPolicy.CheckAddr(a); !ok {
		return false, "outside the cluster CIDRs: " + reason
	}
	return true, ""
}

// alwaysRefused returns why a (already unmapped) is always refused, or "".
func alwaysRefused(a netip.Addr) string {
	if r := refusedRange(a); r != "" {
		return r
	}
	for _, e := range embeddedIPv4s(a) {
		if r := refusedRange(e.Addr); r != "" {
			return e.Via + " " + e.Addr.String() + ": " + r
		}
	}
	return ""
}

// embeddedIPv4s adds the IPv4-compatible and SIIT forms, which the DNS guard refuses as
// whole ranges, to the transition mechanisms egress.EmbeddedIPv4s knows.
func embeddedIPv4s(a netip.Addr) []egress.EmbeddedIPv4 {
	out := egress.EmbeddedIPv4s(a)
	for _, p := range ipv4Compatible {
		if a.Is6() && p.Contains(a) && a.Compare(netip.IPv6Loopback()) > 0 {
			b := a.As16()
			out = append(out, egress.EmbeddedIPv4{Addr: netip.AddrFrom4([4]byte(b[12:])), Via: "IPv4-compatible (" + p.String() + ") embeds"})
		}
	}
	return out
}

func refusedRange(a netip.Addr) string {
	for _, r := range alwaysRefusedEndpoints {
		if r.prefix.Contains(a) {
			return r.label + " (" + r.prefix.String() + ")"
		}
	}
	return ""
}

// refusedEndpoints collects the refused addresses of one Service, for one message.
type refusedEndpoints map[string]string // address -> reason

// maxListedEndpoints bounds how many refused addresses a message lists.
const maxListedEndpoints = 8

// error is the ForbiddenDestination refusal naming the Service and its refused
// addresses, or nil when none was refused.
func (r refusedEndpoints) error(service fmt.Stringer) *refError {
	if len(r) == 0 {
		return nil
	}
	addrs := slices.Sorted(maps.Keys(r))
	parts := make([]string, 0, min(len(addrs), maxListedEndpoints))
	for _, a := range addrs[:min(len(addrs), maxListedEndpoints)] {
		parts = append(parts, a+" ("+r[a]+")")
	}
	more := ""
	if n := len(addrs) - maxListedEndpoints; n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return newRefError(egressv1alpha1.ReasonForbiddenDestination, "Service %s has endpoint addresses Portcullis refuses: %s%s", service, strings.Join(parts, ", "), more)
}
