package bootstrap

import (
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The metrics endpoint of an Envoy (Options.MetricsPort). Envoy's statistics, the
// per-Backend ones included, are served only by its admin interface, which also serves
// /config_dump, /clusters, POST /quitquitquit and runtime changes, and so must never be
// reachable from the network. The bootstrap therefore adds one static listener whose
// only route forwards GET /stats/prometheus to the admin interface through a static
// cluster:
//
//   - the path must be exactly MetricsPath once the query string is removed (Envoy's
//     exact path match); the query string goes along, as /stats/prometheus reads it
//     only to filter its output (?usedonly, ?filter=...);
//   - any other path or method is answered 404 by the listener itself and never
//     reaches the admin interface;
//   - the route configuration is inline, so nothing sent by xDS can widen it.
const (
	// MetricsPath is the only path the metrics listener serves.
	MetricsPath = "/stats/prometheus"
	// AdminClusterName is the static cluster through which the metrics listener
	// reaches the admin interface.
	AdminClusterName    = "portcullis-admin"
	metricsListenerName = "portcullis-metrics"
)

// adminConnectTimeout bounds the connect to the admin interface, which is local.
const adminConnectTimeout = time.Second

// metricsListener is the static listener described above, on opts.MetricsAddress.
func metricsListener(opts Options) (*listenerv3.Listener, error) {
	return staticHTTPListener(metricsListenerName, opts.MetricsAddress, opts.MetricsPort, &hcmv3.HttpConnectionManager{
		StatPrefix:     "metrics",
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: metricsRoutes()},
	})
}

// metricsRoutes is the one route of the metrics listener; everything else is a 404.
func metricsRoutes() *routev3.RouteConfiguration {
	getOnly := &routev3.HeaderMatcher{
		Name: ":method",
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "GET"},
		}},
	}
	return &routev3.RouteConfiguration{
		Name: metricsListenerName,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    metricsListenerName,
			Domains: []string{"*"},
			Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{
					PathSpecifier: &routev3.RouteMatch_Path{Path: MetricsPath},
					Headers:       []*routev3.HeaderMatcher{getOnly},
				},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{
					ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: AdminClusterName},
				}},
			}},
		}},
	}
}

// adminCluster reaches the admin interface at opts.AdminAddress:opts.AdminPort.
func adminCluster(opts Options) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 AdminClusterName,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(adminConnectTimeout),
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: AdminClusterName,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: socketAddress(opts.AdminAddress, opts.AdminPort),
				}},
			}}}},
		},
	}
}
