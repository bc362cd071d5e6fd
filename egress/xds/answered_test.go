package xds

import (
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// TestAnsweredWaitsForEveryResponsesAnswer follows one incremental stream: answered
// once Envoy acknowledged the first snapshot; not while the responses of a new snapshot
// wait for Envoy, nor while one of them still does; answered again once both got an
// answer, a rejection being one.
func TestAnsweredWaitsForEveryResponsesAnswer(t *testing.T) {
	s, _, c := startDelta(t)
	if !s.Answered() {
		t.Fatal("not answered after Envoy acknowledged every response")
	}
	publish(t, s, twoClusters(t, 10080, 2*time.Second))
	got := c.responsesOf(2)
	if s.Answered() {
		t.Fatal("answered while two responses wait for Envoy")
	}
	c.ack(got[resource.EndpointType])
	c.noResponse(100 * time.Millisecond) // the ACK is recorded
	if s.Answered() {
		t.Fatal("answered while the clusters' response waits for Envoy")
	}
	c.nack(got[resource.ClusterType], "cluster spare: no good")
	waitProgrammed(t, s, ReasonRejected)
	if !s.Answered() {
		t.Fatal("not answered after Envoy rejected the last response")
	}
}
