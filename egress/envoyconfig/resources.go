// Package envoyconfig turns the IR of one Gateway into Envoy xDS resources. Every
// builder is a pure function of the IR and Options; one feature lives in one file.
package envoyconfig

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// Resources are the xDS resources of one Gateway, each slice sorted by name. Secrets hold
// key material and must only ever be served by SDS.
type Resources struct {
	Listeners []*listenerv3.Listener
	Routes    []*routev3.RouteConfiguration
	Clusters  []*clusterv3.Cluster
	Endpoints []*endpointv3.ClusterLoadAssignment
	Secrets   []*tlsv3.Secret
}

// ByType returns the resources keyed by xDS type URL, the shape go-control-plane's
// snapshot cache takes.
func (r Resources) ByType() map[resource.Type][]types.Resource {
	return map[resource.Type][]types.Resource{
		resource.ListenerType: asResources(r.Listeners),
		resource.RouteType:    asResources(r.Routes),
		resource.ClusterType:  asResources(r.Clusters),
		resource.EndpointType: asResources(r.Endpoints),
		resource.SecretType:   asResources(r.Secrets),
	}
}

func asResources[T types.Resource](in []T) []types.Resource {
	out := make([]types.Resource, len(in))
	for i, r := range in {
		out[i] = r
	}
	return out
}
