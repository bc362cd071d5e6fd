package envoyconfig

import (
	"fmt"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// listener binds one port on the listen address (every interface by default) with one
// filter chain per plan (tenancy.go): a single one serving every caller, or, when the
// listener isolates tenants, one per caller namespace picked by source address. Each
// chain is an HTTP connection manager, behind TLS when the listener terminates it.
func (b *builder) listener(l *ir.Listener) (*listenerv3.Listener, error) {
	if l.Kind != ir.ListenerHTTP {
		return b.streamListener(l)
	}
	if err := checkPort(l.Port); err != nil {
		return nil, fmt.Errorf("listener %q: %w", l.Name, err)
	}
	out := &listenerv3.Listener{Name: l.Name, Address: socketAddress(b.opts.ListenAddress, l.Port)}
	parts := &chainParts{gateway: b.gw.Name, listener: l.Name}
	for _, plan := range chainPlans(l) {
		chain, err := b.filterChain(l, plan, parts)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", l.Name, err)
		}
		out.FilterChains = append(out.FilterChains, chain)
	}
	if l.Isolated {
		if err := isolatedListener(out, l); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// filterChain is one chain: its connection manager, behind TLS when the listener
// terminates it.
func (b *builder) filterChain(l *ir.Listener, plan chainPlan, parts *chainParts) (*listenerv3.FilterChain, error) {
	hcm, err := b.connectionManager(l, plan, parts)
	if err != nil {
		return nil, err
	}
	chain := &listenerv3.FilterChain{Name: plan.name, Filters: []*listenerv3.Filter{{
		Name:       httpConnManager,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
	}}}
	if l.TLS != nil {
		if chain.TransportSocket, err = b.downstreamTLS(l.TLS); err != nil {
			return nil, err
		}
	}
	return chain, nil
}

// connectionManager is the HTTP connection manager of one filter chain, packed for its
// filter. Routes come by RDS (inline in a static bootstrap, and for the deny chains).
func (b *builder) connectionManager(l *ir.Listener, plan chainPlan, parts *chainParts) (*anypb.Any, error) {
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: l.Name,
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		// Clients are pods, not proxies: take their address from the connection, but do
		// not append it to x-forwarded-for, which would tell outside services the
		// cluster's internal addresses.
		UseRemoteAddress: wrapperspb.Bool(true),
		SkipXffAppend:    true,
		// Match on the RFC 3986 normalised path so "/a/../b" cannot slip past a prefix rule.
		NormalizePath: wrapperspb.Bool(true),
		// "/a%2F..%2Fb" is one segment to a prefix rule but may be "/b" to the upstream:
		// decode %2F and %5C, then redirect the client to the path Portcullis matched.
		PathWithEscapedSlashesAction: hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT,
		// The Host reaches the upstream as the client sent it, port included (Gateway
		// API requires it, even for the gateway's own port); route tables match hosts
		// ignoring ports (routes.go).
		LocalReplyConfig: parts.reply(),
	}
	if l.ForwardProxy {
		allowConnect(hcm)
	}
	var err error
	if hcm.HttpFilters, err = parts.filters(); err != nil {
		return nil, err
	}
	if l.AccessLog {
		log, err := parts.auditLog(plan.name == unknownCallerChain)
		if err != nil {
			return nil, err
		}
		hcm.AccessLog = append(hcm.AccessLog, log)
	}
	if err := b.setRouteSource(hcm, l, plan); err != nil {
		return nil, err
	}
	return pack(hcm)
}

// httpFilters are the caller identity lookups (which enforce nothing) and the router.
func httpFilters() ([]*hcmv3.HttpFilter, error) {
	// Outside services have no use for Envoy's x-envoy-* request headers (timeouts,
	// attempt counts): do not send them upstream.
	router, err := pack(&routerv3.Router{SuppressEnvoyHeaders: true})
	if err != nil {
		return nil, err
	}
	filters, err := identityFilters()
	if err != nil {
		return nil, err
	}
	return append(filters, &hcmv3.HttpFilter{Name: routerFilter, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}), nil
}

// setRouteSource makes the HCM fetch its route configuration by RDS over ADS, or, in a
// static bootstrap, embeds the very same route configuration. A deny chain's table is
// always inline: it only changes with the callers it identifies.
func (b *builder) setRouteSource(hcm *hcmv3.HttpConnectionManager, l *ir.Listener, plan chainPlan) error {
	if plan.deny != "" {
		rc, err := denyTable(l.Name+"/"+plan.name, plan.deny, denyCallers(l, plan), l.ForwardProxy)
		if err != nil {
			return err
		}
		hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc}
		return nil
	}
	if !b.static {
		hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: plan.routes,
		}}
		return nil
	}
	for _, table := range routeTables(l) {
		if table.Name == plan.routes {
			rc, err := b.routeConfiguration(&table)
			if err != nil {
				return err
			}
			hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc}
			return nil
		}
	}
	return fmt.Errorf("no route table %q", plan.routes)
}

// denyCallers are the callers a deny chain serves: known callers without a route table
// (the unknown-caller chain identifies nobody).
func denyCallers(l *ir.Listener, plan chainPlan) []ir.Caller {
	if plan.name != noRouteChain {
		return nil
	}
	tenants := make(map[string]bool, len(l.Tenants))
	for _, t := range l.Tenants {
		tenants[t.Namespace] = true
	}
	var out []ir.Caller
	for _, c := range l.Callers {
		if chainOf(c, tenants) == noRouteChain {
			out = append(out, c)
		}
	}
	return out
}
