package envoyconfig

import (
	"fmt"
	"sort"
	"strings"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// Stream listeners (TLSRoute passthrough and TCPRoute). Each route of each table is a
// filter chain whose TCP proxy passes the connection, bytes untouched, to the route's
// clusters. Envoy picks the chain with one matcher tree: first the source address (the
// caller's namespace on an isolated listener, every address otherwise), then, on a TLS
// passthrough listener, the ClientHello's server name (read by the TLS inspector):
// exact names first, then wildcards from the longest, then the route that takes "*".
// Whatever matches no route reaches a chain that closes the connection and writes the
// decision in the audit log. As on HTTP listeners, pods coming and going change only the
// matcher, never a chain, so Envoy drains no open connection for them.
const (
	tcpProxyFilter      = "envoy.filters.network.tcp_proxy"
	tlsInspectorFilter  = "envoy.filters.listener.tls_inspector"
	serverNameInputName = "envoy.matching.inputs.server_name"
	streamSharedTable   = "streams"
	streamNoRouteChain  = "no-route"
	// refusedCluster is the cluster a connection that must be closed is sent to. No
	// cluster has this name (the builder checks), so the TCP proxy finds none, closes
	// the connection before reading a byte, and logs it with the NC flag.
	refusedCluster = "portcullis.refused"
)

// Decision of a stream connection whose server name (or, on TCP, nothing) no route takes.
const DecisionNoStreamRoute = "denied: no route for this server name"

// streamListener builds a TLS passthrough or TCP listener.
func (b *builder) streamListener(l *ir.Listener) (*listenerv3.Listener, error) {
	if err := checkPort(l.Port); err != nil {
		return nil, fmt.Errorf("listener %q: %w", l.Name, err)
	}
	if b.clusters.has(refusedCluster) {
		return nil, fmt.Errorf("listener %q: a cluster is named %q, which stream listeners reserve", l.Name, refusedCluster)
	}
	out := &listenerv3.Listener{Name: l.Name, Address: socketAddress(b.opts.ListenAddress, l.Port)}
	if l.Kind == ir.ListenerTLSPassthrough {
		inspector, err := pack(&tlsinspectorv3.TlsInspector{})
		if err != nil {
			return nil, err
		}
		out.ListenerFilters = []*listenerv3.ListenerFilter{{Name: tlsInspectorFilter, ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: inspector}}}
	}
	sb := &streamBuilder{b: b, l: l, out: out}
	m, err := sb.matcher()
	if err != nil {
		return nil, fmt.Errorf("listener %q: %w", l.Name, err)
	}
	out.FilterChainMatcher = m
	return out, nil
}

// streamBuilder adds a stream listener's chains as its matcher names them.
type streamBuilder struct {
	b   *builder
	l   *ir.Listener
	out *listenerv3.Listener
}

// matcher is the listener's matcher tree: by source address, then by server name.
func (sb *streamBuilder) matcher() (*xdsmatcherv3.Matcher, error) {
	if !sb.l.Isolated {
		shared, err := sb.table(streamSharedTable, "", sb.l.Streams)
		if err != nil {
			return nil, err
		}
		ip := &xdsmatcherv3.IPMatcher{RangeMatchers: []*xdsmatcherv3.IPMatcher_IPRangeMatcher{{Ranges: everyAddress(), OnMatch: shared}}}
		return sb.withFallback(ip, unknownCallerChain, DecisionUnknownCaller)
	}
	tables := map[string]*xdsmatcherv3.Matcher_OnMatch{}
	for _, t := range sb.l.Tenants {
		m, err := sb.table(tenantChainPrefix+t.Namespace, t.Namespace, t.Streams)
		if err != nil {
			return nil, err
		}
		tables[tenantChainPrefix+t.Namespace] = m
	}
	if hasUnrestricted(sb.l.Callers) {
		m, err := sb.table(unrestrictedChain, "(host)", sb.l.Streams)
		if err != nil {
			return nil, err
		}
		tables[unrestrictedChain] = m
	}
	ip, err := sb.callerRanges(tables)
	if err != nil {
		return nil, err
	}
	return sb.withFallback(ip, unknownCallerChain, DecisionUnknownCaller)
}

// callerRanges sends each known caller's address to its table, or to the chain that
// refuses callers whose namespace has none.
func (sb *streamBuilder) callerRanges(tables map[string]*xdsmatcherv3.Matcher_OnMatch) (*xdsmatcherv3.IPMatcher, error) {
	order, ranges, err := callersByChain(sb.l)
	if err != nil {
		return nil, err
	}
	ip := &xdsmatcherv3.IPMatcher{}
	for _, chain := range order {
		onMatch, ok := tables[chain]
		if !ok {
			var err error
			if onMatch, err = sb.refusal(noRouteChain, "", DecisionNoRouteForCaller); err != nil {
				return nil, err
			}
		}
		ip.RangeMatchers = append(ip.RangeMatchers, &xdsmatcherv3.IPMatcher_IPRangeMatcher{Ranges: ranges[chain], OnMatch: onMatch})
	}
	return ip, nil
}

// withFallback is the source-address tree of ip whose unmatched addresses are refused
// by the named chain.
func (sb *streamBuilder) withFallback(ip *xdsmatcherv3.IPMatcher, chain, decision string) (*xdsmatcherv3.Matcher, error) {
	m, err := sourceIPTree(ip)
	if err != nil {
		return nil, err
	}
	if m.OnNoMatch, err = sb.refusal(chain, unknownCaller, decision); err != nil {
		return nil, err
	}
	return m, nil
}

// everyAddress is every IPv4 and IPv6 address.
func everyAddress() []*xdscorev3.CidrRange {
	return []*xdscorev3.CidrRange{
		{AddressPrefix: "0.0.0.0", PrefixLen: wrapperspb.UInt32(0)},
		{AddressPrefix: "::", PrefixLen: wrapperspb.UInt32(0)},
	}
}

// table is what a route table does with a connection: on a TCP listener, its one
// route's chain; on a TLS passthrough listener, a match of the server name against its
// routes' names. prefix names the table's chains; namespace is its callers' namespace
// for the audit log.
func (sb *streamBuilder) table(prefix, namespace string, routes []ir.StreamRoute) (*xdsmatcherv3.Matcher_OnMatch, error) {
	var fallback *xdsmatcherv3.Matcher_OnMatch
	var preds []*xdsmatcherv3.Matcher_MatcherList_FieldMatcher
	for _, n := range precedence(routes) {
		chain, err := sb.routeChain(prefix, namespace, n.route)
		if err != nil {
			return nil, err
		}
		if n.name == "*" {
			fallback = chain
			continue
		}
		p, err := serverNamePredicate(n.name, chain)
		if err != nil {
			return nil, err
		}
		preds = append(preds, p)
	}
	if fallback == nil {
		var err error
		if fallback, err = sb.noRoute(namespace); err != nil {
			return nil, err
		}
	}
	if len(preds) == 0 {
		return fallback, nil
	}
	return &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Matcher{Matcher: &xdsmatcherv3.Matcher{
		MatcherType: &xdsmatcherv3.Matcher_MatcherList_{MatcherList: &xdsmatcherv3.Matcher_MatcherList{Matchers: preds}},
		OnNoMatch:   fallback,
	}}}, nil
}

// noRoute refuses what no route of a table takes: on an isolated listener as any
// route the caller may not use, otherwise naming what was missing.
func (sb *streamBuilder) noRoute(namespace string) (*xdsmatcherv3.Matcher_OnMatch, error) {
	switch {
	case sb.l.Isolated:
		return sb.refusal(noRouteChain, namespace, DecisionNoRouteForCaller)
	case sb.l.Kind == ir.ListenerTLSPassthrough:
		return sb.refusal(streamNoRouteChain, namespace, DecisionNoStreamRoute)
	}
	return sb.refusal(streamNoRouteChain, namespace, DecisionNoRoute)
}

// namedRoute is one server name of a table and the route that takes it.
type namedRoute struct {
	name  string
	route *ir.StreamRoute
}

// precedence lists a table's server names in the order they are tried: exact names,
// then wildcards from the longest (the most specific), "*" last.
func precedence(routes []ir.StreamRoute) []namedRoute {
	var out []namedRoute
	for i := range routes {
		for _, n := range routes[i].ServerNames {
			out = append(out, namedRoute{name: n, route: &routes[i]})
		}
	}
	rank := func(n string) int {
		switch {
		case n == "*":
			return 2
		case strings.HasPrefix(n, "*."):
			return 1
		}
		return 0
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].name, out[j].name
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	return out
}

// serverNamePredicate matches the ClientHello's server name, ignoring case: exactly, or
// for "*.example.com" any name ending in ".example.com" (one label or more, as Gateway
// API's wildcards).
func serverNamePredicate(name string, onMatch *xdsmatcherv3.Matcher_OnMatch) (*xdsmatcherv3.Matcher_MatcherList_FieldMatcher, error) {
	input, err := pack(&networkinputsv3.ServerNameInput{})
	if err != nil {
		return nil, err
	}
	sm := &xdsmatcherv3.StringMatcher{IgnoreCase: true, MatchPattern: &xdsmatcherv3.StringMatcher_Exact{Exact: name}}
	if suffix, ok := strings.CutPrefix(name, "*"); ok {
		sm.MatchPattern = &xdsmatcherv3.StringMatcher_Suffix{Suffix: suffix}
	}
	return &xdsmatcherv3.Matcher_MatcherList_FieldMatcher{
		Predicate: &xdsmatcherv3.Matcher_MatcherList_Predicate{MatchType: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate_{
			SinglePredicate: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate{
				Input:   &xdscorev3.TypedExtensionConfig{Name: serverNameInputName, TypedConfig: input},
				Matcher: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate_ValueMatch{ValueMatch: sm},
			},
		}},
		OnMatch: onMatch,
	}, nil
}

// routeChain adds (once) the chain of one route in one table and returns the action
// that picks it.
func (sb *streamBuilder) routeChain(prefix, namespace string, r *ir.StreamRoute) (*xdsmatcherv3.Matcher_OnMatch, error) {
	name := prefix + "/" + r.Name
	if !sb.hasChain(name) {
		if err := sb.checkTargets(r); err != nil {
			return nil, err
		}
		proxy := &tcpproxyv3.TcpProxy{StatPrefix: sb.l.Name}
		setStreamClusters(proxy, r)
		if err := sb.addChain(name, proxy, streamAudit{route: r.Name, namespace: namespace, decision: DecisionAllowed}); err != nil {
			return nil, err
		}
	}
	return chainAction(name)
}

// refusal adds (once) a chain that closes every connection and logs the decision.
func (sb *streamBuilder) refusal(name, namespace, decision string) (*xdsmatcherv3.Matcher_OnMatch, error) {
	if namespace != "" && namespace != unknownCaller {
		name += "/" + namespace
	}
	if !sb.hasChain(name) {
		proxy := &tcpproxyv3.TcpProxy{StatPrefix: sb.l.Name, ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: refusedCluster}}
		if err := sb.addChain(name, proxy, streamAudit{namespace: namespace, decision: decision}); err != nil {
			return nil, err
		}
	}
	return chainAction(name)
}

func (sb *streamBuilder) hasChain(name string) bool {
	for _, c := range sb.out.FilterChains {
		if c.Name == name {
			return true
		}
	}
	return false
}

// addChain adds a chain holding one TCP proxy, with its audit log when the listener
// writes one.
func (sb *streamBuilder) addChain(name string, proxy *tcpproxyv3.TcpProxy, audit streamAudit) error {
	if sb.l.AccessLog {
		log, err := audit.accessLog(sb.b.gw.Name, sb.l.Name)
		if err != nil {
			return err
		}
		proxy.AccessLog = []*accesslogv3.AccessLog{log}
	}
	cfg, err := pack(proxy)
	if err != nil {
		return err
	}
	sb.out.FilterChains = append(sb.out.FilterChains, &listenerv3.FilterChain{Name: name, Filters: []*listenerv3.Filter{{
		Name: tcpProxyFilter, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: cfg},
	}}})
	return nil
}

func chainAction(name string) (*xdsmatcherv3.Matcher_OnMatch, error) {
	a, err := stringAction(name)
	if err != nil {
		return nil, err
	}
	return &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: a}}, nil
}

// setStreamClusters sets where a route's TCP proxy sends connections: its one cluster, or
// its clusters by weight, with the share of invalid backendRefs (or every connection,
// when none is valid) sent to refusedCluster to be closed.
func setStreamClusters(proxy *tcpproxyv3.TcpProxy, r *ir.StreamRoute) {
	switch {
	case len(r.Backends) == 1 && r.InvalidWeight == 0:
		proxy.ClusterSpecifier = &tcpproxyv3.TcpProxy_Cluster{Cluster: r.Backends[0].Cluster}
		return
	case len(r.Backends) == 0:
		proxy.ClusterSpecifier = &tcpproxyv3.TcpProxy_Cluster{Cluster: refusedCluster}
		return
	}
	w := &tcpproxyv3.TcpProxy_WeightedCluster{}
	for _, wc := range r.Backends {
		w.Clusters = append(w.Clusters, &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: wc.Cluster, Weight: wc.Weight})
	}
	if r.InvalidWeight > 0 {
		w.Clusters = append(w.Clusters, &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: refusedCluster, Weight: r.InvalidWeight})
	}
	proxy.ClusterSpecifier = &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: w}
}

// checkTargets requires every cluster of a stream route to exist and speak TCP: the
// gateway must never originate TLS or HTTP on a passed-through connection.
func (sb *streamBuilder) checkTargets(r *ir.StreamRoute) error {
	for _, wc := range r.Backends {
		if !sb.b.isTCPCluster(wc.Cluster) {
			return fmt.Errorf("stream route %q: cluster %q is not a defined TCP cluster", r.Name, wc.Cluster)
		}
	}
	return nil
}

func (b *builder) isTCPCluster(name string) bool {
	c, ok := b.clusterNamed(name)
	return ok && c.Protocol == ir.ProtocolTCP && c.TLS == nil
}

// streamTargetsResolve tells whether every cluster the listener's stream routes name is
// still a TCP cluster, so that a listener built before may be reused.
func (b *builder) streamTargetsResolve(l *ir.Listener) bool {
	tables := [][]ir.StreamRoute{l.Streams}
	for _, t := range l.Tenants {
		tables = append(tables, t.Streams)
	}
	for _, routes := range tables {
		for _, r := range routes {
			for _, wc := range r.Backends {
				if !b.isTCPCluster(wc.Cluster) {
					return false
				}
			}
		}
	}
	return true
}
