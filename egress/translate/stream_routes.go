package translate

import (
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// Stream routes: TLSRoute (TLS passthrough, picked by the ClientHello's SNI) and
// TCPRoute (every connection of a TCP listener). Both pass whole connections to their
// backendRefs without originating or terminating TLS, so they share everything but the
// listener they attach to and whether hostnames pick them. When two routes claim the
// same server name (TLS) or the same listener (TCP) in one route table, the older one
// takes the connections (Gateway API's conflict rule); both stay Accepted and count in
// the listener's attachedRoutes.

// streamRoute is a TLSRoute or a TCPRoute seen through what both kinds have.
type streamRoute struct {
	kind       gwapiv1.Kind
	meta       *metav1.ObjectMeta
	parentRefs []gwapiv1.ParentReference
	hostnames  []gwapiv1.Hostname // TLSRoute only
	rules      [][]gwapiv1.BackendRef
	key        string // "namespace/name"
	callers    []string
}

// irName names the route in the IR and the audit log: "tlsroute/<ns>/<name>".
func (r *streamRoute) irName() string { return strings.ToLower(string(r.kind)) + "/" + r.key }

// streamRoutesOf lists the TLSRoutes and TCPRoutes, oldest first (then by name), the
// order in which conflicts are settled.
func streamRoutesOf(res *egress.Resources) []*streamRoute {
	out := make([]*streamRoute, 0, len(res.TLSRoutes)+len(res.TCPRoutes))
	for i := range res.TLSRoutes {
		r := &res.TLSRoutes[i]
		sr := &streamRoute{kind: tlsRouteKind.Kind, meta: &r.ObjectMeta, parentRefs: r.Spec.ParentRefs, hostnames: r.Spec.Hostnames, key: nameOf(r).String()}
		for _, rule := range r.Spec.Rules {
			sr.rules = append(sr.rules, rule.BackendRefs)
		}
		out = append(out, sr)
	}
	for i := range res.TCPRoutes {
		r := &res.TCPRoutes[i]
		sr := &streamRoute{kind: tcpRouteKind.Kind, meta: &r.ObjectMeta, parentRefs: r.Spec.ParentRefs, key: nameOf(r).String()}
		for _, rule := range r.Spec.Rules {
			sr.rules = append(sr.rules, rule.BackendRefs)
		}
		out = append(out, sr)
	}
	sort.SliceStable(out, func(i, j int) bool { return olderRoute(out[i], out[j]) })
	return out
}

func olderRoute(a, b *streamRoute) bool {
	ta, tb := a.meta.CreationTimestamp, b.meta.CreationTimestamp
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.key < b.key
}

// streamEntry is one stream route attached to one listener.
type streamEntry struct {
	route *streamRoute
	ir    ir.StreamRoute
}

// attachStreamRoutes attaches every TLSRoute and TCPRoute naming this Gateway and records
// one RouteParentStatus per parentRef that does.
func (t *translator) attachStreamRoutes(g *gatewayContext) {
	choices := map[gwapiv1.Kind]listenerChoices{tlsRouteKind.Kind: {}, tcpRouteKind.Kind: {}}
	for _, r := range t.streamRoutes {
		for _, ref := range r.parentRefs {
			if refersToGateway(ref, r.meta.Namespace, g.gw) {
				t.addStreamParentStatus(r, t.attachStreamRoute(g, choices[r.kind], r, ref))
			}
		}
	}
}

// attachStreamRoute attaches one route to the listeners its parentRef selects and
// returns the parent status.
func (t *translator) attachStreamRoute(g *gatewayContext, choices listenerChoices, r *streamRoute, ref gwapiv1.ParentReference) gwapiv1.RouteParentStatus {
	st := gwapiv1.RouteParentStatus{ParentRef: ref, ControllerName: gwapiv1.GatewayController(t.opts.ControllerName)}
	gen := r.meta.Generation
	reject := func(reason gwapiv1.RouteConditionReason, msg string) gwapiv1.RouteParentStatus {
		st.Conditions = []metav1.Condition{condition(string(gwapiv1.RouteConditionAccepted), false, string(reason), msg, gen), t.streamRefStatus(r).condition(gen)}
		return st
	}
	selected, allowed := t.chooseListeners(g, choices, ref, r.meta.Namespace, r.kind)
	if len(selected) == 0 {
		return reject(gwapiv1.RouteReasonNoMatchingParent, "no valid listener of the Gateway matches parentRef's sectionName/port")
	}
	if len(allowed) == 0 {
		return reject(gwapiv1.RouteReasonNotAllowedByListeners, "the selected listeners do not allow "+string(r.kind)+"s from namespace "+r.meta.Namespace)
	}
	var names [][]string
	for _, l := range allowed {
		names = append(names, streamServerNames(l, r))
	}
	if !anyNonEmpty(names) {
		return reject(gwapiv1.RouteReasonNoMatchingListenerHostname, "no hostname of the route matches a hostname of the selected listeners")
	}
	backends, invalid, resolved := t.streamBackends(g, r)
	for i, l := range allowed {
		if len(names[i]) == 0 {
			continue
		}
		l.attachedRoutes++
		entry := streamEntry{route: r, ir: ir.StreamRoute{Name: r.irName(), ServerNames: names[i], Backends: backends, InvalidWeight: invalid}}
		g.streams[l.envoyPort] = append(g.streams[l.envoyPort], entry)
	}
	st.Conditions = []metav1.Condition{
		condition(string(gwapiv1.RouteConditionAccepted), true, string(gwapiv1.RouteReasonAccepted), "route accepted", gen),
		resolved.condition(gen),
	}
	return st
}

// streamServerNames are the server names a route takes on a listener: for a TLS
// listener the intersection of the listener's and the route's hostnames; a TCP
// listener has none to choose by, so every connection ("*").
func streamServerNames(l *listenerContext, r *streamRoute) []string {
	if l.spec.Protocol == gwapiv1.TCPProtocolType {
		return []string{"*"}
	}
	return intersectHostnames(hostnameOf(l.spec), hostnameStrings(r.hostnames))
}

func anyNonEmpty(lists [][]string) bool {
	for _, l := range lists {
		if len(l) > 0 {
			return true
		}
	}
	return false
}

// addStreamParentStatus files a parent status under the route's kind.
func (t *translator) addStreamParentStatus(r *streamRoute, st gwapiv1.RouteParentStatus) {
	m := t.result.Statuses.TLSRoutes
	if r.kind == tcpRouteKind.Kind {
		m = t.result.Statuses.TCPRoutes
	}
	m[r.key] = append(m[r.key], st)
}

// streamCallers lists the caller namespaces a stream route serves: its own, then those
// its namespace admits by ReferenceGrant from Pods (to the route's kind).
func (t *translator) streamCallers(r *streamRoute) []string {
	if r.callers == nil {
		r.callers = t.grantedCallers(r.meta.Namespace, gwapiv1.GroupName, string(r.kind), r.meta.Name)
	}
	return r.callers
}
