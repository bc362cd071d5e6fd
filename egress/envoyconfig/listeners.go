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

// listener binds one port on the listen address (every interface by default) with a
// single filter chain: one HTTP connection manager, behind TLS when the listener
// terminates it.
func (b *builder) listener(l *ir.Listener) (*listenerv3.Listener, error) {
	if err := checkPort(l.Port); err != nil {
		return nil, fmt.Errorf("listener %q: %w", l.Name, err)
	}
	hcm, err := b.connectionManager(l)
	if err != nil {
		return nil, fmt.Errorf("listener %q: %w", l.Name, err)
	}
	chain := &listenerv3.FilterChain{Filters: []*listenerv3.Filter{{
		Name:       httpConnManager,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
	}}}
	if l.TLS != nil {
		if chain.TransportSocket, err = b.downstreamTLS(l.TLS); err != nil {
			return nil, fmt.Errorf("listener %q: %w", l.Name, err)
		}
	}
	return &listenerv3.Listener{
		Name:         l.Name,
		Address:      socketAddress(b.opts.ListenAddress, l.Port),
		FilterChains: []*listenerv3.FilterChain{chain},
	}, nil
}

// connectionManager is the HTTP connection manager of a listener, packed for its filter.
// Routes come by RDS under the listener's name (inline in a static bootstrap).
func (b *builder) connectionManager(l *ir.Listener) (*anypb.Any, error) {
	// Outside services have no use for Envoy's x-envoy-* request headers (timeouts,
	// attempt counts): do not send them upstream.
	router, err := pack(&routerv3.Router{SuppressEnvoyHeaders: true})
	if err != nil {
		return nil, err
	}
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
		// Gateway API hostnames never carry a port, but Host headers sent to a listener on
		// a non-default port do; strip it so virtual hosts match and upstreams see a clean Host.
		StripPortMode: &hcmv3.HttpConnectionManager_StripAnyHostPort{StripAnyHostPort: true},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       routerFilter,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router},
		}},
	}
	if err := b.setRouteSource(hcm, l); err != nil {
		return nil, err
	}
	return pack(hcm)
}

// setRouteSource makes the HCM fetch its route configuration by RDS over ADS, or, in a
// static bootstrap, embeds the very same route configuration.
func (b *builder) setRouteSource(hcm *hcmv3.HttpConnectionManager, l *ir.Listener) error {
	if !b.static {
		hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: l.Name,
		}}
		return nil
	}
	rc, err := b.routeConfiguration(l)
	if err != nil {
		return err
	}
	hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc}
	return nil
}
