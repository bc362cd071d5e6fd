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

// TestApplyingUntilEveryResponseOfTheGatewayIsAnswered follows the same stream through
// Applying, which the reconciler asks before it looks at acknowledgements: not applying
// at rest or for a Gateway nobody serves; applying while a response waits, though
// Envoy already acknowledged the other; not applying once that one is rejected (a
// rejection is news at once).
func TestApplyingUntilEveryResponseOfTheGatewayIsAnswered(t *testing.T) {
	s, _, c := startDelta(t)
	if s.Applying(testGateway) || s.Applying("gw/nobody") {
		t.Fatal("applying at rest")
	}
	publish(t, s, twoClusters(t, 10080, 2*time.Second))
	got := c.responsesOf(2)
	if !s.Applying(testGateway) {
		t.Fatal("not applying while two responses wait for Envoy")
	}
	c.ack(got[resource.EndpointType])
	c.noResponse(100 * time.Millisecond)
	if !s.Applying(testGateway) {
		t.Fatal("not applying while the clusters' response waits for Envoy")
	}
	c.nack(got[resource.ClusterType], "cluster spare: no good")
	waitProgrammed(t, s, ReasonRejected)
	if s.Applying(testGateway) {
		t.Fatal("applying after Envoy rejected the last response")
	}
}
