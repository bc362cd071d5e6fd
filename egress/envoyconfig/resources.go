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
	return r.ByTypeAgain(func(resource.Type) []types.Resource { return nil })
}

// ByTypeAgain is ByType, except that a type whose messages are exactly last(typeURL)'s
// (the very messages, in the same order) is that slice itself, not a new one: the xDS
// server hands in what it published last, and at 10,000 Backends one Backend's change
// leaves most of 40,000 resources' types as they were.
func (r Resources) ByTypeAgain(last func(typeURL resource.Type) []types.Resource) map[resource.Type][]types.Resource {
	return map[resource.Type][]types.Resource{
		resource.ListenerType: asResourcesAgain(r.Listeners, last(resource.ListenerType)),
		resource.RouteType:    asResourcesAgain(r.Routes, last(resource.RouteType)),
		resource.ClusterType:  asResourcesAgain(r.Clusters, last(resource.ClusterType)),
		resource.EndpointType: asResourcesAgain(r.Endpoints, last(resource.EndpointType)),
		resource.SecretType:   asResourcesAgain(r.Secrets, last(resource.SecretType)),
	}
}

// asResourcesAgain is in as go-control-plane's resources: last when it holds exactly
// in's messages, else a new slice.
func asResourcesAgain[T types.Resource](in []T, last []types.Resource) []types.Resource {
	if len(last) == len(in) && len(in) > 0 && sameMessages(in, last) {
		return last
	}
	out := make([]types.Resource, len(in))
	for i, r := range in {
		out[i] = r
	}
	return out
}

func sameMessages[T types.Resource](in []T, last []types.Resource) bool {
	for i, r := range in {
		if types.Resource(r) != last[i] {
			return false
		}
	}
	return true
}
