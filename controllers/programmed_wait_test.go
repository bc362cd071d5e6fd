package controllers

import (
	"testing"

	"github.com/portcullis-io/portcullis/egress/xds"
)

// TestBackendStateNamesTheGatewayItWaitsFor: a Backend not in force through a Gateway
// says why in that Gateway's words, prefixed by its name: Pending while the Gateway is
// Programmed, the Gateway's own reason otherwise, a rejection before any other reason.
// The message made for a Gateway is the one every Backend waiting for it gets.
func TestBackendStateNamesTheGatewayItWaitsFor(t *testing.T) {
	runs := func(generations map[string]int64) fleetState {
		return fleetState{running: []*versionContent{{backends: generationsOf(generations)}}}
	}
	fleets := map[string]fleetState{
		"ns/programmed": runs(map[string]int64{"ns/b": 1}),
		"ns/rejected":   runs(map[string]int64{"ns/b": 1}),
		"ns/down":       {},
	}
	gatewayStates := map[string]programState{
		"ns/programmed": {ok: true, reason: xds.ReasonProgrammed, message: "Envoy acknowledged the configuration"},
		"ns/rejected":   {reason: xds.ReasonRejected, message: "Envoy e1 rejected it"},
		"ns/down":       {reason: xds.ReasonPending, message: "no Envoy connected"},
	}
	for _, tc := range []struct {
		name        string
		generation  int64
		gateways    []string
		wantOK      bool
		wantReason  string
		wantMessage string
	}{
		{"in force through every Gateway", 1, []string{"ns/programmed"}, true, xds.ReasonProgrammed, "Envoy acknowledged the configuration of ns/programmed"},
		{"a new generation waits for a Programmed Gateway", 2, []string{"ns/programmed"}, false, xds.ReasonPending, "ns/programmed: waiting for Envoy to accept this generation of the Backend"},
		{"a Gateway no Envoy runs gives its own reason", 1, []string{"ns/down"}, false, xds.ReasonPending, "ns/down: no Envoy connected"},
		{"a rejection wins over a later wait", 2, []string{"ns/rejected", "ns/down"}, false, xds.ReasonRejected, "ns/rejected: Envoy e1 rejected it"},
		{"the last Gateway's wait when none rejected", 2, []string{"ns/programmed", "ns/down"}, false, xds.ReasonPending, "ns/down: no Envoy connected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			waits := waitStates{}
			for range 2 { // the second Backend takes the Gateway's message made for the first
				got := backendState("ns/b", tc.generation, tc.gateways, fleets, gatewayStates, ackMessages{}, waits)
				if got.ok != tc.wantOK || got.reason != tc.wantReason || got.message != tc.wantMessage {
					t.Fatalf("got ok=%v %s %q, want ok=%v %s %q", got.ok, got.reason, got.message, tc.wantOK, tc.wantReason, tc.wantMessage)
				}
			}
		})
	}
}
