package xds

import (
	"fmt"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestDeltaResubscribedResourceIsSentAgain: an Envoy that lost interest in a resource
// and regained it before its next request names it in resource_names_subscribe again
// without unsubscribing; it has forgotten its copy, and the server sends the resource
// again although its version did not change. A new stream's initial_resource_versions
// are what Envoy holds: those are not sent again.
func TestDeltaResubscribedResourceIsSentAgain(t *testing.T) {
	s, conn, c := startDelta(t)

	c.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNamesSubscribe: []string{"backend"}})
	eds := c.next(resource.EndpointType)
	if got := sortedNames(eds); got != "backend" {
		t.Fatalf("resubscribed to backend, the response carries %q", got)
	}
	c.ack(eds)
	c.noResponse(300 * time.Millisecond)

	// A new stream reporting what it holds, nothing changed meanwhile: the route
	// configuration it holds is not sent again.
	c.cancel()
	xdstest.WaitFor(t, xdstest.Timeout, "the stream to close", func() error {
		if n := len(s.Status(testGateway).Envoys); n != 0 {
			return fmt.Errorf("%d Envoys connected", n)
		}
		return nil
	})
	again := openDelta(t, conn, "envoy-a", c.held)
	again.subscribe(resource.ClusterType)
	again.ack(again.next(resource.ClusterType))
	again.subscribe(resource.EndpointType, "backend", "spare")
	again.ack(again.next(resource.EndpointType)) // endpoints are always sent again (TestDeltaReconnectGetsOnlyWhatChanged)
	again.subscribe(resource.ListenerType)
	again.ack(again.next(resource.ListenerType))
	again.subscribe(resource.RouteType, "http")
	again.noResponse(300 * time.Millisecond)
}
