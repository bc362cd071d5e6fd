package xds

import (
	"context"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// Endpoints follow their cluster. Envoy warms an updated EDS cluster anew and, over an
// incremental stream, waits for its endpoints to be sent after the cluster: the new
// cluster's EDS watch joins a name the stream already subscribes to, so Envoy asks for
// nothing, and endpoints that came before the cluster went to the old one. Until its
// 15 s initial fetch timeout, Envoy keeps serving with the old cluster: a Service that a
// new BackendTLSPolicy puts under TLS is still spoken to in plaintext (its server
// answers 400), a new SNI or SAN list is not yet checked.
//
// An endpoints resource's version carries the digests of the clusters that fetch it
// (resource_versions.go), so a snapshot that changes a cluster changes its endpoints
// too. That puts the endpoints after the cluster only when both watches are open when
// the snapshot is published (SetSnapshot answers clusters first). They often are not:
// Envoy acknowledges a cluster response only once the clusters it updated are warm,
// and a snapshot published meanwhile is answered on the endpoints watch at once and on
// the cluster watch when that acknowledgement comes, seconds later. Seen in the Gateway
// API conformance suite, where six BackendTLSPolicies arrive a few milliseconds apart.
//
// So every cluster response makes the endpoints of the clusters it carries due on the
// stream: the stream's next endpoints answer sends them whatever the stream was sent
// before, and when the stream's endpoints watch is open, it is answered right after the
// cluster response, on the same ordered channel. Endpoints of a new cluster that
// Envoy has not subscribed to yet are not sent (Envoy subscribes to them when it
// creates the cluster, and gets them then).

// noteClustersSentLocked makes due on stream the endpoints of the clusters named send,
// which a response of resources is about to carry. c.mu must be held.
func (c *deltaCache) noteClustersSentLocked(stream int64, send []string, resources typeItems) {
	if stream == 0 {
		return
	}
	for _, name := range send {
		r, _, _ := resources.lookup(name)
		eds, ok := endpointsOf(r)
		if !ok {
			continue
		}
		if c.due[stream] == nil {
			c.due[stream] = map[string]bool{}
		}
		c.due[stream][eds] = true
	}
}

// endpointsOf is the name of the endpoints resource an EDS cluster fetches.
func endpointsOf(r types.Resource) (string, bool) {
	cluster, ok := r.(*clusterv3.Cluster)
	if !ok || cluster.GetType() != clusterv3.Cluster_EDS {
		return "", false
	}
	if name := cluster.GetEdsClusterConfig().GetServiceName(); name != "" {
		return name, true
	}
	return cluster.GetName(), true
}

// takeDueLocked returns the endpoints due on stream and forgets them. c.mu must be held.
func (c *deltaCache) takeDueLocked(stream int64) []string {
	due := c.due[stream]
	if len(due) == 0 {
		return nil
	}
	delete(c.due, stream)
	names := make([]string, 0, len(due))
	for name := range due {
		names = append(names, name)
	}
	return names
}

// withDue adds the due names to the names the stream is sent whatever it was sent.
func withDue(forgotten map[string]bool, due []string) map[string]bool {
	if len(due) == 0 {
		return forgotten
	}
	if forgotten == nil {
		forgotten = make(map[string]bool, len(due))
	}
	for _, name := range due {
		forgotten[name] = true
	}
	return forgotten
}

// answerDueLocked answers stream's open endpoints watch when endpoints are due on it,
// right after a cluster response was put on the stream's channel. The channel has room
// for a response of every type, and an open watch means none of its type is waiting.
// c.mu must be held.
func (c *deltaCache) answerDueLocked(gateway string, stream int64, snap cachev3.ResourceSnapshot) {
	if len(c.due[stream]) == 0 {
		return
	}
	for id, w := range c.watches[gateway] {
		if w.stream != stream || w.req.GetTypeUrl() != resource.EndpointType {
			continue
		}
		if resp := c.answerLocked(context.Background(), snap, w.stream, w.req, w.sub); resp != nil {
			delete(c.watches[gateway], id)
			w.out <- resp
		}
		return
	}
}
