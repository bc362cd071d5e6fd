package controllers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/xds"
)

// An Envoy more than maxVersions versions behind (busy applying ten thousand clusters
// while a burst of creates publishes version after version) runs a version the
// reconciler no longer remembers, so what it carries is unknown. Read as "not in force",
// that flipped every Programmed Gateway and Backend to Pending and back once Envoy
// caught up: at 10,000 Backends up to 20,000 status writes in the middle of a burst (a
// bound, not a count), and a `kubectl wait --for=condition=Programmed` that had
// returned saw it go away.
//
// An object found Programmed at its current generation by the last marking stays so
// when the only news is such a forgotten version: the versions Envoy ran then carried
// the generation, every version published since carries it too (its generation and
// its Gateways are the same, or the marking would differ), and an Envoy only moves
// forward through the versions published (a reconnecting one reports what it holds).
// Anything else that is not in force (a rejection, an Envoy that has not accepted
// every type, a new generation) is reported as before.

// stillProgrammed keeps a Backend Programmed that the last marking found Programmed with
// the same generation and message (the same Gateways), when ps is Pending only because
// of a forgotten version.
func (b *backendMarks) stillProgrammed(key string, generation int64, ps programState, message string) programState {
	if !ps.forgotten {
		return ps
	}
	e := b.m[key]
	if e == nil || e.mark.status != metav1.ConditionTrue || e.mark.message != message || translatedGeneration(e.src) != generation {
		return ps
	}
	return programState{ok: true, reason: xds.ReasonProgrammed, message: message}
}

// stillProgrammedGateway keeps a Gateway Programmed that the last marking found
// Programmed at generation, when ps is Pending only because of a forgotten version.
func (r *Reconciler) stillProgrammedGateway(key string, generation int64, ps programState) programState {
	if g, ok := r.programmedGateways[key]; !ps.forgotten || !ok || g != generation {
		return ps
	}
	return programState{ok: true, reason: xds.ReasonProgrammed, message: "Envoy acknowledged the configuration"}
}

// rememberProgrammedGateways keeps the generation of each Gateway this marking found
// Programmed, for the next marking.
func (r *Reconciler) rememberProgrammedGateways(states map[string]programState, gateways map[string]*gwapiv1.Gateway) {
	next := make(map[string]int64, len(states))
	for key, st := range states {
		if obj := gateways[key]; st.ok && obj != nil {
			next[key] = obj.Generation
		}
	}
	r.programmedGateways = next
}
