package controllers

import (
	"testing"

	"github.com/portcullis-io/portcullis/egress/xds"
)

// TestFleetStateWithPeers: the leader counts the Envoys of other replicas as its own,
// so a Gateway whose Envoys all reached a follower is Programmed, and one Envoy anywhere
// that has not accepted, or rejected, the configuration keeps it from being.
func TestFleetStateWithPeers(t *testing.T) {
	current := reportedContent{Gateway: 2}
	old := reportedContent{Gateway: 1}
	localRunning := fleetState{status: xds.GatewayStatus{Envoys: []xds.EnvoyStatus{{}}}, running: []*versionContent{{gateway: 2}}}
	localPending := fleetState{status: xds.GatewayStatus{Envoys: []xds.EnvoyStatus{{}}}}
	noLocal := fleetState{}
	tests := []struct {
		name         string
		local        fleetState
		peers        []fleetReport
		wantOK       bool
		wantRejected bool
	}{
		{name: "every Envoy on a follower, running the generation", local: noLocal, peers: []fleetReport{{Envoys: 2, Accepted: true, Running: []reportedContent{current}}}, wantOK: true},
		{name: "Envoys on both, all current", local: localRunning, peers: []fleetReport{{Envoys: 1, Accepted: true, Running: []reportedContent{current}}}, wantOK: true},
		{name: "a follower's Envoy runs an older generation", local: localRunning, peers: []fleetReport{{Envoys: 1, Accepted: true, Running: []reportedContent{old}}}},
		{name: "a follower's Envoy has not accepted every type", local: localRunning, peers: []fleetReport{{Envoys: 1}}},
		{name: "a local Envoy has not accepted, the follower's has", local: localPending, peers: []fleetReport{{Envoys: 1, Accepted: true, Running: []reportedContent{current}}}},
		{name: "a follower's Envoy rejected the latest version", local: localRunning, peers: []fleetReport{{Envoys: 1, Accepted: true, Running: []reportedContent{current}, Rejection: "Envoy e2 rejected the listener configuration version v: bad"}}, wantRejected: true},
		{name: "no Envoy anywhere", local: noLocal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.local.withPeers(tt.peers).gatewayState(2)
			if got.ok != tt.wantOK || (got.reason == xds.ReasonRejected) != tt.wantRejected {
				t.Fatalf("gatewayState = %+v, want ok=%v rejected=%v", got, tt.wantOK, tt.wantRejected)
			}
		})
	}
}
