package bootstrap

import (
	"fmt"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// staticHTTPListener is a static listener on host:port whose only filter is hcm, with
// the router appended to hcm's HTTP filters. The bootstrap's own listeners (readiness,
// metrics) are exempt from the global connection limit: an overloaded Envoy is exactly
// the one whose readiness and metrics must still be read.
func staticHTTPListener(name, host string, port uint32, hcm *hcmv3.HttpConnectionManager) (*listenerv3.Listener, error) {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, err
	}
	hcm.HttpFilters = append(hcm.HttpFilters, &hcmv3.HttpFilter{
		Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router},
	})
	packed, err := anypb.New(hcm)
	if err != nil {
		return nil, err
	}
	l := &listenerv3.Listener{
		Name:                  name,
		Address:               socketAddress(host, port),
		IgnoreGlobalConnLimit: true,
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: packed},
		}}}},
	}
	if err := l.ValidateAll(); err != nil {
		return nil, fmt.Errorf("%s listener: %w", name, err)
	}
	return l, nil
}
