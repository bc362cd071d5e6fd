package controllers

import (
	"fmt"
	"slices"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds"
)

// Programmed says whether Envoy runs the current generation of an object, not whether it
// runs the latest snapshot: a DNS change or another Backend's edit publishes a new
// version, and flipping every Gateway and Backend to Pending until Envoy acknowledges it
// would rewrite thousands of statuses twice per change and make `kubectl wait` flaky.
// So each published version records which generation of its Gateway and of each Backend
// it carries, and an object is Programmed when every version its Envoys run carries its
// current generation.

// maxVersions bounds the versions remembered per Gateway; Envoys run one or two of the
// latest, and an older one simply reads as "not in force".
const maxVersions = 32

// versionContent is what one published version carries.
type versionContent struct {
	gateway  int64
	backends versionGenerations
}

type versionEntry struct {
	version string
	content versionContent
}

// versionLogs holds, per Gateway, the last versions published, oldest first. Only the
// reconcile goroutine uses it.
type versionLogs map[string][]versionEntry

func (l *versionLogs) record(gateway, version string, c versionContent) {
	if *l == nil {
		*l = versionLogs{}
	}
	entries := (*l)[gateway]
	for i := range entries {
		if entries[i].version == version { // same configuration: the new generations are in force too
			entries[i].content = c
			return
		}
	}
	entries = append(entries, versionEntry{version: version, content: c})
	if len(entries) > maxVersions {
		entries = entries[len(entries)-maxVersions:]
	}
	(*l)[gateway] = entries
}

func (l versionLogs) forget(gateway string) { delete(l, gateway) }

// latest is what the version published last for a Gateway carries; nil before any.
func (l versionLogs) latest(gateway string) *versionContent {
	entries := l[gateway]
	if len(entries) == 0 {
		return nil
	}
	return &entries[len(entries)-1].content
}

func (l versionLogs) find(gateway, version string) *versionContent {
	for i := range l[gateway] {
		if l[gateway][i].version == version {
			return &l[gateway][i].content
		}
	}
	return nil
}

// contentOf is what a Gateway's new snapshot carries: its generation and the generation
// of every usable Backend its routes reach, built on those of the version published last
// (prev; version_generations.go).
func contentOf(gateway string, obj *gwapiv1.Gateway, result translate.Result, prev *versionContent) versionContent {
	c := versionContent{}
	if obj != nil {
		c.gateway = obj.Generation
	}
	var last versionGenerations
	if prev != nil {
		last = prev.backends
	}
	c.backends = nextGenerations(last, func(f func(key string, generation int64)) {
		carried(gateway, result, func(key string, st *egressv1alpha1.BackendStatus) { f(key, translatedGeneration(st)) })
	})
	return c
}

// carried calls f with every usable Backend the Gateway's routes reach, and its status.
func carried(gateway string, result translate.Result, f func(key string, st *egressv1alpha1.BackendStatus)) {
	for key, gws := range result.BackendGateways {
		st := result.Statuses.Backends[key]
		if st == nil || !backendUsable(st) {
			continue
		}
		if slices.Contains(gws, gateway) {
			f(key, st)
		}
	}
}

// heldContent is what a version carries while the routes are held back (staging.go):
// only what the version Envoy runs now carried.
func (r *Reconciler) heldContent(gateway string) versionContent {
	if prev := r.versions.find(gateway, r.opts.XDS.Status(gateway).Version); prev != nil {
		return *prev
	}
	return versionContent{}
}

// translatedGeneration is the generation of the Backend that translation saw, as its
// conditions carry it: what a snapshot built from that translation carries of it.
func translatedGeneration(st *egressv1alpha1.BackendStatus) int64 {
	if c := findCond(st.Conditions, egressv1alpha1.ConditionAccepted); c != nil {
		return c.ObservedGeneration
	}
	return 0
}

// fleetState is what the Envoys of one Gateway run, read once per reconcile.
type fleetState struct {
	status xds.GatewayStatus
	// running are the contents of the versions the Envoys run; nil when some Envoy has
	// not accepted every type yet, or none is connected.
	running []*versionContent
	// problem is why the Gateway's new configuration was not published.
	problem error
	// forgotten: running is nil only because an Envoy runs a version older than those
	// remembered (programmed_forgotten.go).
	forgotten bool
	// peerEnvoys and peerRejection come from the other replicas' reports (fleet_report.go).
	peerEnvoys    int
	peerRejection string
}

// fleetState is what the Gateway's Envoys run, on this replica and, on the leader, on
// the others.
func (r *Reconciler) fleetState(gateway string, problem error) fleetState {
	return r.localFleetState(gateway, problem).withPeers(r.peers[gateway])
}

func (r *Reconciler) localFleetState(gateway string, problem error) fleetState {
	fs := fleetState{status: r.opts.XDS.Status(gateway), problem: problem}
	versions, all := fs.status.Running()
	if !all {
		return fs
	}
	for _, v := range versions {
		c := r.versions.find(gateway, v)
		if c == nil {
			return fleetState{status: fs.status, problem: problem, forgotten: true}
		}
		fs.running = append(fs.running, c)
	}
	return fs
}

// inForce tells whether every version the Envoys run satisfies has.
func (fs fleetState) inForce(has func(*versionContent) bool) bool {
	if len(fs.running) == 0 {
		return false
	}
	for _, c := range fs.running {
		if !has(c) {
			return false
		}
	}
	return true
}

// programState is whether an object's configuration is in force in Envoy.
type programState struct {
	ok      bool
	reason  string // xds.ReasonProgrammed, ReasonRejected, ReasonPending, or Invalid
	message string
	// forgotten: not ok only because an Envoy runs a version too old to look into.
	forgotten bool
}

// gatewayState: Programmed when the Envoys run the Gateway's current generation and
// none rejected the latest version; the rejection is shown even when an older version
// keeps serving, since the latest change did not take.
func (fs fleetState) gatewayState(generation int64) programState {
	if fs.problem != nil {
		return programState{reason: string(gwapiv1.GatewayReasonInvalid), message: fs.problem.Error()}
	}
	if nack, kind := fs.status.Rejection(); nack != nil {
		return programState{reason: xds.ReasonRejected, message: fmt.Sprintf("Envoy %s rejected the %s configuration version %s: %s",
			nack.NodeID, kind, nack.Version, nack.Message)}
	}
	if fs.peerRejection != "" {
		return programState{reason: xds.ReasonRejected, message: fs.peerRejection}
	}
	if fs.inForce(func(c *versionContent) bool { return c.gateway == generation }) {
		return programState{ok: true, reason: xds.ReasonProgrammed, message: "Envoy acknowledged the configuration"}
	}
	_, reason, message := fs.status.Programmed()
	if len(fs.status.Envoys) == 0 && fs.peerEnvoys > 0 && reason != xds.ReasonRejected {
		reason, message = xds.ReasonPending, "waiting for Envoy to acknowledge the configuration"
	}
	if reason == xds.ReasonProgrammed { // the latest is accepted but was published for an older generation
		reason, message = xds.ReasonPending, "waiting for the configuration of this generation to be published"
	}
	return programState{reason: reason, message: message, forgotten: fs.forgotten && reason == xds.ReasonPending}
}

// markProgrammed turns the translator's Pending Programmed conditions into what Envoy
// runs.
func (r *Reconciler) markProgrammed(result *translate.Result, problems map[string]error, gateways map[string]*gwapiv1.Gateway) {
	fleets := map[string]fleetState{}
	gatewayStates := map[string]programState{}
	for key, st := range result.Statuses.Gateways {
		fleets[key] = r.fleetState(key, problems[key])
		var generation int64
		if obj := gateways[key]; obj != nil {
			generation = obj.Generation
		}
		gatewayStates[key] = r.stillProgrammedGateway(key, generation, fleets[key].gatewayState(generation))
		applyProgrammed(st, gatewayStates[key])
		markRejectedListeners(st, gateways[key], gatewayStates[key])
	}
	acks, waits := ackMessages{}, waitStates{}
	result.Statuses.Backends = r.marks.mark(result.Statuses.Backends, func(key string, st *egressv1alpha1.BackendStatus) (programmedMark, bool) {
		c := findCond(st.Conditions, egressv1alpha1.ConditionProgrammed)
		if c == nil || c.Reason != egressv1alpha1.ReasonPending || !backendUsable(st) {
			return programmedMark{}, false
		}
		ps := backendState(key, translatedGeneration(st), result.BackendGateways[key], fleets, gatewayStates, acks, waits)
		ps = r.marks.stillProgrammed(key, translatedGeneration(st), ps, acks.of(result.BackendGateways[key]))
		return programmedMark{boolStatus(ps.ok), ps.backendReason(), ps.message}, true
	})
	r.marks.sweep()
	r.rememberProgrammedGateways(gatewayStates, gateways)
}

// backendState: Programmed when the Envoys of every Gateway using the Backend run its
// current generation; otherwise the first Gateway's reason, a rejection first.
func backendState(key string, generation int64, gateways []string, fleets map[string]fleetState, gatewayStates map[string]programState, acks ackMessages, waits waitStates) programState {
	out := programState{ok: len(gateways) > 0, reason: xds.ReasonProgrammed, message: acks.of(gateways)}
	forgotten := true
	for _, gw := range gateways {
		if fleets[gw].inForce(func(c *versionContent) bool { g, ok := c.backends.get(key); return ok && g == generation }) {
			continue
		}
		st := gatewayStates[gw]
		forgotten = forgotten && fleets[gw].forgotten && (st.ok || st.forgotten)
		out.ok = false
		out.forgotten = forgotten
		if out.reason != xds.ReasonRejected {
			wait := waits.of(gw, st)
			out.reason, out.message = wait.reason, wait.message
		}
	}
	return out
}

// waitStates are, by Gateway, what a Backend not yet in force through it says: the
// Gateway's own reason, or Pending while the Gateway is Programmed, in a message naming
// the Gateway. Made once per marking: while no Envoy runs a Gateway's versions (none
// connected yet, or all gone) every Backend waits, and the message made for each of
// 10,000 Backends on every reconcile was 1.5 MB a change.
type waitStates map[string]programState

func (w waitStates) of(gateway string, st programState) programState {
	if wait, ok := w[gateway]; ok {
		return wait
	}
	wait := programState{reason: st.reason, message: st.message}
	if st.ok {
		wait = programState{reason: xds.ReasonPending, message: "waiting for Envoy to accept this generation of the Backend"}
	}
	wait.message = gateway + ": " + wait.message
	w[gateway] = wait
	return wait
}

// ackMessages are the messages of Backends Programmed through one Gateway, made once per
// marking: the same message made for each of 10,000 Backends on every reconcile was
// 2.6 MB a change.
type ackMessages map[string]string

func (a ackMessages) of(gateways []string) string {
	if len(gateways) != 1 {
		return ackMessage(gateways)
	}
	m, ok := a[gateways[0]]
	if !ok {
		m = ackMessage(gateways)
		a[gateways[0]] = m
	}
	return m
}

func ackMessage(gateways []string) string {
	return "Envoy acknowledged the configuration of " + strings.Join(gateways, ", ")
}

func (p programState) backendReason() string {
	switch p.reason {
	case xds.ReasonProgrammed:
		return egressv1alpha1.ReasonProgrammed
	case xds.ReasonRejected:
		return egressv1alpha1.ReasonRejected
	}
	return egressv1alpha1.ReasonPending
}

// applyProgrammed sets a Gateway's and its valid listeners' Programmed conditions.
func applyProgrammed(st *gwapiv1.GatewayStatus, ps programState) {
	if c := findCond(st.Conditions, string(gwapiv1.GatewayConditionProgrammed)); c != nil && c.Reason == string(gwapiv1.GatewayReasonPending) {
		c.Status, c.Reason, c.Message = boolStatus(ps.ok), ps.reason, ps.message
	}
	for i := range st.Listeners {
		c := findCond(st.Listeners[i].Conditions, string(gwapiv1.ListenerConditionProgrammed))
		if c != nil && c.Reason == string(gwapiv1.ListenerReasonPending) && ps.ok {
			c.Status, c.Reason, c.Message = "True", string(gwapiv1.ListenerReasonProgrammed), "Envoy acknowledged the configuration"
		}
	}
}
