package bootstrap

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The readiness endpoint of Envoy pods (Options.ReadinessPort). Envoy's admin interface answers /ready but
// listens on 127.0.0.1 only (it must never be reachable from the network), and the
// kubelet probes the pod's IP; an exec probe would depend on tools in the image. So the
// bootstrap adds one static listener on every interface that answers only GET /ready,
// through Envoy's health check filter:
//
//   - Envoy opens its listeners only once its initialization is done (the first
//     clusters and listeners arrived by xDS, or their initial fetch timed out), when the
//     admin /ready turns LIVE; before that the probe's connection is refused;
//   - afterwards the filter answers 200, or 503 while Envoy is failing health checks
//     (admin POST /healthcheck/fail, e.g. before a planned drain);
//   - any other path gets 404: nothing else is served there.
const (
	// ReadinessPath is the only path the readiness listener answers.
	ReadinessPath         = "/ready"
	readinessListenerName = "portcullis-readiness"
)

// readinessListener is the static listener described above, on 0.0.0.0:port (like the
// Gateway listeners).
func readinessListener(port uint32) (*listenerv3.Listener, error) {
	healthCheck, err := anypb.New(&healthcheckv3.HealthCheck{
		PassThroughMode: wrapperspb.Bool(false),
		Headers: []*routev3.HeaderMatcher{{
			Name: ":path",
			HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
				MatchPattern: &matcherv3.StringMatcher_Exact{Exact: ReadinessPath},
			}},
		}},
	})
	if err != nil {
		return nil, err
	}
	return staticHTTPListener(readinessListenerName, "0.0.0.0", port, &hcmv3.HttpConnectionManager{
		StatPrefix: "readiness",
		// No virtual host: every request the health check filter lets through is a 404.
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{Name: readinessListenerName}},
		HttpFilters: []*hcmv3.HttpFilter{
			{Name: "envoy.filters.http.health_check", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: healthCheck}},
		},
	})
}

// Ports every Envoy pod binds besides the Gateway listeners: the admin interface (on
// loopback), the readiness listener and the metrics listener (see metrics.go). The
// translator refuses Gateway listeners on them.
const (
	PodAdminPort     = 19000
	PodReadinessPort = 19001
	PodMetricsPort   = 19002
)
