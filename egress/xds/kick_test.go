package xds

import (
	"fmt"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestKickClosesOnlyThatEnvoysStream: Kick ends the named Envoy's stream, so it
// reconnects and asks for everything again, and leaves the other Envoys' streams alone.
func TestKickClosesOnlyThatEnvoysStream(t *testing.T) {
	s := New(testr.New(t))
	addr, _ := serve(t, s)
	if _, _, err := s.Publish(testGateway, helloResources(t, 10080, "hello")); err != nil {
		t.Fatal(err)
	}
	conn := dial(t, addr)
	late, other := openADS(t, conn, "envoy-late"), openADS(t, conn, "envoy-other")
	for _, c := range []*adsClient{late, other} {
		c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resource.ClusterType})
		c.ack(c.next(resource.ClusterType))
	}
	xdstest.WaitFor(t, xdstest.Timeout, "two Envoys connected", func() error {
		if n := len(s.Status(testGateway).Envoys); n != 2 {
			return fmt.Errorf("%d Envoys connected", n)
		}
		return nil
	})

	if n := s.Kick(testGateway, "envoy-nobody"); n != 0 {
		t.Fatalf("Kick of an Envoy that is not connected closed %d streams", n)
	}
	if n := s.Kick(testGateway, "envoy-late"); n != 1 {
		t.Fatalf("Kick closed %d streams, want 1", n)
	}
	select {
	case <-late.recvErr:
	case <-time.After(xdstest.Timeout):
		t.Fatal("the kicked Envoy's stream is still open")
	}
	select {
	case err := <-other.recvErr:
		t.Fatalf("the other Envoy's stream ended too: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	xdstest.WaitFor(t, xdstest.Timeout, "only the other Envoy connected", func() error {
		st := s.Status(testGateway)
		if len(st.Envoys) != 1 || st.Envoys[0].NodeID != "envoy-other" {
			return fmt.Errorf("connected: %+v", st.Envoys)
		}
		return nil
	})
}
