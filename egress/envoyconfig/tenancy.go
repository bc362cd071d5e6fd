package envoyconfig

import (
	"fmt"
	"net/netip"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// Tenant isolation on a listener. Envoy picks one filter chain per connection by the
// connection's source address (the listener's filter_chain_matcher), and each chain's
// connection manager serves one route table:
//
//   - "tenant/<ns>": callers from namespace ns, the routes of ns and those admitting it;
//   - "unrestricted": the listener's shared table, for unrestricted callers;
//   - "no-route-for-caller": known callers whose namespace has no route: 403;
//   - "unknown-caller": every other source address: 403.
//
// Pods come and go all the time; only the matcher names their addresses, so a pod
// churn changes the matcher alone, which Envoy applies without draining a connection.
// The chains change only when a namespace gains its first route or loses its last.
const (
	tenantChainPrefix   = "tenant/"
	unrestrictedChain   = "unrestricted"
	noRouteChain        = "no-route-for-caller"
	unknownCallerChain  = "unknown-caller"
	sourceIPInputName   = "envoy.matching.inputs.source_ip"
	ipMatcherName       = "envoy.matching.custom_matchers.ip_range_matcher"
	chainActionTypeName = "chain"
)

// chainPlan is one filter chain of a listener: the route table its connection
// manager serves and what the audit log says of its callers.
type chainPlan struct {
	name string
	// routes is the RDS route configuration; empty for an inline deny table.
	routes string
	// deny, for an inline table, answers every request with 403 and this decision.
	deny string
}

// chainPlans lists the filter chains of a listener: one unnamed chain serving the
// shared table when the listener is not isolated.
func chainPlans(l *ir.Listener) []chainPlan {
	if !l.Isolated {
		return []chainPlan{{routes: l.Name}}
	}
	plans := make([]chainPlan, 0, len(l.Tenants)+3)
	for _, t := range l.Tenants {
		plans = append(plans, chainPlan{name: tenantChainPrefix + t.Namespace, routes: tenantTableName(l.Name, t.Namespace)})
	}
	if hasUnrestricted(l.Callers) {
		plans = append(plans, chainPlan{name: unrestrictedChain, routes: l.Name})
	}
	return append(plans,
		chainPlan{name: noRouteChain, deny: DecisionNoRouteForCaller},
		chainPlan{name: unknownCallerChain, deny: DecisionUnknownCaller})
}

// tenantTableName names the route configuration of one tenant of a listener.
func tenantTableName(listener, namespace string) string {
	return listener + "/" + tenantChainPrefix + namespace
}

// unknownCaller stands in the audit log for the identity of an address Envoy does not know.
const unknownCaller = "unknown"

func hasUnrestricted(callers []ir.Caller) bool {
	for _, c := range callers {
		if c.Unrestricted {
			return true
		}
	}
	return false
}

// routeTables lists every route configuration of a listener as a listener value that
// carries just that table, so that one cache and one builder serve them all: the shared
// table (named after the listener) and, when isolated, one per tenant. A table's
// Callers are the callers it identifies in the audit log.
func routeTables(l *ir.Listener) []ir.Listener {
	if l.Kind != ir.ListenerHTTP {
		return nil // stream listeners carry their routes in their chains
	}
	shared := ir.Listener{Name: l.Name, Port: l.Port, TLS: l.TLS, VirtualHosts: l.VirtualHosts, Isolated: l.Isolated, AccessLog: l.AccessLog, ForwardProxy: l.ForwardProxy}
	if !l.Isolated {
		shared.Callers = l.Callers
		return []ir.Listener{shared}
	}
	byNamespace := callersByNamespace(l.Callers)
	tables := make([]ir.Listener, 0, len(l.Tenants)+1)
	if hasUnrestricted(l.Callers) {
		shared.Callers = byNamespace[""]
		tables = append(tables, shared)
	}
	for _, t := range l.Tenants {
		tables = append(tables, ir.Listener{
			Name: tenantTableName(l.Name, t.Namespace), Port: l.Port, TLS: l.TLS, VirtualHosts: t.VirtualHosts,
			Isolated: true, AccessLog: l.AccessLog, ForwardProxy: l.ForwardProxy, Callers: byNamespace[t.Namespace],
		})
	}
	return tables
}

// callersByNamespace groups callers by namespace; unrestricted ones under "".
func callersByNamespace(callers []ir.Caller) map[string][]ir.Caller {
	out := map[string][]ir.Caller{}
	for _, c := range callers {
		ns := c.Namespace
		if c.Unrestricted {
			ns = ""
		}
		out[ns] = append(out[ns], c)
	}
	return out
}

// callerMatcher sends each known source address to its namespace's chain (or to the
// no-route chain when the namespace has no table) and every other one to the
// unknown-caller chain.
func callerMatcher(l *ir.Listener) (*xdsmatcherv3.Matcher, error) {
	order, ranges, err := callersByChain(l)
	if err != nil {
		return nil, err
	}
	ip := &xdsmatcherv3.IPMatcher{}
	for _, chain := range order {
		m, err := mergedRange(ranges[chain], chain)
		if err != nil {
			return nil, err
		}
		ip.RangeMatchers = append(ip.RangeMatchers, m)
	}
	return sourceIPMatcher(ip, unknownCallerChain)
}

// callersByChain groups the listener's caller addresses by the chain that serves them
// (chainOf), chains in the order of their first caller.
func callersByChain(l *ir.Listener) ([]string, map[string][]*xdscorev3.CidrRange, error) {
	tenants := make(map[string]bool, len(l.Tenants))
	for _, t := range l.Tenants {
		tenants[t.Namespace] = true
	}
	ranges := map[string][]*xdscorev3.CidrRange{}
	var order []string
	for _, c := range l.Callers {
		chain := chainOf(c, tenants)
		cidr, err := cidrRange(c.Prefix)
		if err != nil {
			return nil, nil, err
		}
		if _, seen := ranges[chain]; !seen {
			order = append(order, chain)
		}
		ranges[chain] = append(ranges[chain], cidr...)
	}
	return order, ranges, nil
}

// chainOf is the filter chain that serves a caller.
func chainOf(c ir.Caller, tenants map[string]bool) string {
	switch {
	case c.Unrestricted:
		return unrestrictedChain
	case tenants[c.Namespace]:
		return tenantChainPrefix + c.Namespace
	default:
		return noRouteChain
	}
}

// mergedRange is one range matcher holding every range of one chain.
func mergedRange(ranges []*xdscorev3.CidrRange, chain string) (*xdsmatcherv3.IPMatcher_IPRangeMatcher, error) {
	action, err := stringAction(chain)
	if err != nil {
		return nil, err
	}
	return &xdsmatcherv3.IPMatcher_IPRangeMatcher{Ranges: ranges, OnMatch: &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: action}}}, nil
}

// sourceIPMatcher matches the connection's source address with ip, and falls back to
// the named chain.
func sourceIPMatcher(ip *xdsmatcherv3.IPMatcher, fallback string) (*xdsmatcherv3.Matcher, error) {
	m, err := sourceIPTree(ip)
	if err != nil {
		return nil, err
	}
	onNoMatch, err := stringAction(fallback)
	if err != nil {
		return nil, err
	}
	m.OnNoMatch = &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: onNoMatch}}
	return m, nil
}

// sourceIPTree is a matcher that looks the connection's source address up in ip.
func sourceIPTree(ip *xdsmatcherv3.IPMatcher) (*xdsmatcherv3.Matcher, error) {
	input, err := pack(&networkinputsv3.SourceIPInput{})
	if err != nil {
		return nil, err
	}
	custom, err := pack(ip)
	if err != nil {
		return nil, err
	}
	return &xdsmatcherv3.Matcher{MatcherType: &xdsmatcherv3.Matcher_MatcherTree_{MatcherTree: &xdsmatcherv3.Matcher_MatcherTree{
		Input:    &xdscorev3.TypedExtensionConfig{Name: sourceIPInputName, TypedConfig: input},
		TreeType: &xdsmatcherv3.Matcher_MatcherTree_CustomMatch{CustomMatch: &xdscorev3.TypedExtensionConfig{Name: ipMatcherName, TypedConfig: custom}},
	}}}, nil
}

// stringAction is a filter chain matcher's action: the name of a filter chain.
func stringAction(chain string) (*xdscorev3.TypedExtensionConfig, error) {
	v, err := pack(wrapperspb.String(chain))
	if err != nil {
		return nil, err
	}
	return &xdscorev3.TypedExtensionConfig{Name: chainActionTypeName, TypedConfig: v}, nil
}

// cidrRange parses a caller prefix; a bare address is a /32 or /128.
func cidrRange(s string) ([]*xdscorev3.CidrRange, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return nil, fmt.Errorf("caller %q is not an address or CIDR", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	p = p.Masked()
	return []*xdscorev3.CidrRange{{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(p.Bits()))}}, nil
}

// isolatedListener adds the tenant chains and their matcher to a listener.
func isolatedListener(out *listenerv3.Listener, l *ir.Listener) error {
	m, err := callerMatcher(l)
	if err != nil {
		return fmt.Errorf("listener %q: %w", l.Name, err)
	}
	out.FilterChainMatcher = m
	return nil
}
