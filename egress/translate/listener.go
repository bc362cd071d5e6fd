package translate

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// reservedEnvoyPorts are bound inside every Envoy pod (admin, readiness and metrics),
// so no Gateway listener may use them.
var reservedEnvoyPorts = map[uint32]string{
	bootstrap.PodAdminPort:     "Envoy's admin interface",
	bootstrap.PodReadinessPort: "the Envoy pod's readiness listener",
	bootstrap.PodMetricsPort:   "the Envoy pod's metrics listener",
}

// privilegedPortOffset moves Gateway ports below 1024 to port+offset inside Envoy, so
// Envoy needs no privilege to bind; the Service maps the public port back.
const privilegedPortOffset = 10000

// listenerContext is one Gateway listener and what validation found.
type listenerContext struct {
	spec             *gwapiv1.Listener
	gatewayNamespace string
	envoyPort        uint32
	// problem, when set, makes the listener not served: Accepted=False with this reason.
	problem, problemMsg string
	// refProblem makes ResolvedRefs=False (the listener may still be served).
	refProblem, refProblemMsg string
	// unservedMsg, when set, keeps an accepted listener out of Envoy (Programmed=False):
	// an HTTPS listener none of whose certificates resolves. Routes still attach to it
	// and count in attachedRoutes, so fixing the Secret is all it takes to serve them.
	unservedMsg           string
	conflict, conflictMsg string
	supportedKinds        []gwapiv1.RouteGroupKind
	certSecrets           []ir.Secret
	attachedRoutes        int32
	// forwardProxy: the Gateway's ForwardProxyAnnotation names this HTTP listener.
	forwardProxy bool
}

func (l *listenerContext) valid() bool { return l.problem == "" && l.conflict == "" }

// served reports whether Envoy gets the listener.
func (l *listenerContext) served() bool { return l.valid() && l.unservedMsg == "" }

// EnvoyPort returns the port Envoy binds for a Gateway listener port.
func EnvoyPort(port gwapiv1.PortNumber) uint32 {
	if port < 1024 {
		return uint32(port) + privilegedPortOffset
	}
	return uint32(port)
}

// portUnavailable says why Envoy cannot bind envoyPort for a listener on port, or "".
func (t *translator) portUnavailable(envoyPort uint32, port gwapiv1.PortNumber) string {
	if what, reserved := reservedEnvoyPorts[envoyPort]; reserved {
		return fmt.Sprintf("port %d is used by %s inside the gateway; choose another port", port, what)
	}
	if what, held := t.opts.HeldPorts[envoyPort]; held {
		if uint32(port) != envoyPort {
			return fmt.Sprintf("port %d is bound as %d, which %s holds on this machine; choose another port", port, envoyPort, what)
		}
		return fmt.Sprintf("port %d is held by %s on this machine; choose another port", port, what)
	}
	return ""
}

var httpRouteKind = gwapiv1.RouteGroupKind{Group: ptrTo(gwapiv1.Group(gwapiv1.GroupName)), Kind: "HTTPRoute"}

// validateListener checks protocol, TLS and allowed route kinds of one listener.
func (t *translator) validateListener(g *gatewayContext, spec *gwapiv1.Listener) *listenerContext {
	l := &listenerContext{spec: spec, gatewayNamespace: g.gw.Namespace, envoyPort: EnvoyPort(spec.Port)}
	if msg := t.portUnavailable(l.envoyPort, spec.Port); msg != "" {
		l.problem, l.problemMsg = string(gwapiv1.ListenerReasonPortUnavailable), msg
		l.supportedKinds = supportedKinds(l, spec.AllowedRoutes)
		return l
	}
	switch spec.Protocol {
	case gwapiv1.HTTPProtocolType, gwapiv1.TCPProtocolType:
	case gwapiv1.HTTPSProtocolType:
		t.validateListenerTLS(g, l)
	case gwapiv1.TLSProtocolType:
		if msg := passthroughProblem(spec); msg != "" {
			// Like an unsupported protocol: no route kind can attach (supportedKinds empty).
			l.problem, l.problemMsg = string(gwapiv1.ListenerReasonUnsupportedValue), msg
			return l
		}
	default:
		// No route kind can attach to a protocol Portcullis does not serve, so the
		// listener supports none (Gateway API wants an empty supportedKinds here).
		l.problem = string(gwapiv1.ListenerReasonUnsupportedProtocol)
		l.problemMsg = fmt.Sprintf("protocol %s is not supported; use HTTP, HTTPS, TLS (passthrough) or TCP", spec.Protocol)
		return l
	}
	l.supportedKinds = supportedKinds(l, spec.AllowedRoutes)
	return l
}

// passthroughProblem says why a TLS listener cannot be served, or "": Portcullis passes
// TLS through untouched (TLSRoute); terminating it is what HTTPS listeners are for.
func passthroughProblem(spec *gwapiv1.Listener) string {
	if spec.TLS == nil || spec.TLS.Mode == nil || *spec.TLS.Mode != gwapiv1.TLSModePassthrough {
		return "tls.mode must be Passthrough on a TLS listener: Portcullis passes the client's TLS through to the destination (TLSRoute); to terminate TLS use an HTTPS listener"
	}
	return ""
}

var (
	tlsRouteKind = gwapiv1.RouteGroupKind{Group: ptrTo(gwapiv1.Group(gwapiv1.GroupName)), Kind: "TLSRoute"}
	tcpRouteKind = gwapiv1.RouteGroupKind{Group: ptrTo(gwapiv1.Group(gwapiv1.GroupName)), Kind: "TCPRoute"}
)

// routeKindOf is the one route kind a listener protocol carries.
func routeKindOf(p gwapiv1.ProtocolType) gwapiv1.RouteGroupKind {
	switch p {
	case gwapiv1.TLSProtocolType:
		return tlsRouteKind
	case gwapiv1.TCPProtocolType:
		return tcpRouteKind
	}
	return httpRouteKind
}

// supportedKinds keeps the route kind the listener's protocol carries (HTTPRoute for
// HTTP and HTTPS, TLSRoute for TLS, TCPRoute for TCP) and reports any other requested
// kind as InvalidRouteKinds.
func supportedKinds(l *listenerContext, allowed *gwapiv1.AllowedRoutes) []gwapiv1.RouteGroupKind {
	own := routeKindOf(l.spec.Protocol)
	if allowed == nil || len(allowed.Kinds) == 0 {
		return []gwapiv1.RouteGroupKind{own}
	}
	var kinds []gwapiv1.RouteGroupKind
	var refused []string
	for _, k := range allowed.Kinds {
		group := gwapiv1.GroupName
		if k.Group != nil {
			group = string(*k.Group)
		}
		if group == gwapiv1.GroupName && k.Kind == own.Kind {
			if len(kinds) == 0 {
				kinds = append(kinds, own)
			}
			continue
		}
		refused = append(refused, fmt.Sprintf("%s/%s", group, k.Kind))
	}
	if len(refused) > 0 {
		l.refProblem = string(gwapiv1.ListenerReasonInvalidRouteKinds)
		l.refProblemMsg = fmt.Sprintf("route kinds not supported on %s listeners: %s; only %s is", l.spec.Protocol, strings.Join(refused, ", "), own.Kind)
	}
	return kinds
}

// carries tells whether a listener takes routes of a kind.
func (l *listenerContext) carries(kind gwapiv1.Kind) bool {
	for _, k := range l.supportedKinds {
		if k.Kind == kind {
			return true
		}
	}
	return false
}

// markConflicts applies Gateway API's listener conflict rules: listeners sharing a port
// must share a protocol, and no two may claim the same hostname on one port.
func markConflicts(ls []*listenerContext) {
	for i, a := range ls {
		for _, b := range ls[i+1:] {
			if a.problem != "" || b.problem != "" || a.envoyPort != b.envoyPort {
				continue
			}
			switch {
			case a.spec.Protocol != b.spec.Protocol:
				a.setConflict(gwapiv1.ListenerReasonProtocolConflict, fmt.Sprintf("listener %s uses port %d with protocol %s", b.spec.Name, b.spec.Port, b.spec.Protocol))
				b.setConflict(gwapiv1.ListenerReasonProtocolConflict, fmt.Sprintf("listener %s uses port %d with protocol %s", a.spec.Name, a.spec.Port, a.spec.Protocol))
			case hostnameOf(a.spec) == hostnameOf(b.spec):
				a.setConflict(gwapiv1.ListenerReasonHostnameConflict, fmt.Sprintf("listener %s claims the same hostname on port %d", b.spec.Name, b.spec.Port))
				b.setConflict(gwapiv1.ListenerReasonHostnameConflict, fmt.Sprintf("listener %s claims the same hostname on port %d", a.spec.Name, a.spec.Port))
			}
		}
	}
}

func (l *listenerContext) setConflict(reason gwapiv1.ListenerConditionReason, msg string) {
	if l.conflict == "" {
		l.conflict, l.conflictMsg = string(reason), msg
	}
}

func hostnameOf(l *gwapiv1.Listener) string {
	if l.Hostname == nil {
		return ""
	}
	return string(*l.Hostname)
}

// status renders the listener's status entry.
func (l *listenerContext) status(gen int64) gwapiv1.ListenerStatus {
	st := gwapiv1.ListenerStatus{Name: l.spec.Name, SupportedKinds: l.supportedKinds, AttachedRoutes: l.attachedRoutes}
	if st.SupportedKinds == nil {
		st.SupportedKinds = []gwapiv1.RouteGroupKind{}
	}
	accepted := condition(string(gwapiv1.ListenerConditionAccepted), true, string(gwapiv1.ListenerReasonAccepted), "listener accepted", gen)
	programmed := condition(string(gwapiv1.ListenerConditionProgrammed), false, string(gwapiv1.ListenerReasonPending), "waiting for Envoy to acknowledge the configuration", gen)
	if l.problem != "" {
		accepted = condition(string(gwapiv1.ListenerConditionAccepted), false, l.problem, l.problemMsg, gen)
		programmed = condition(string(gwapiv1.ListenerConditionProgrammed), false, string(gwapiv1.ListenerReasonInvalid), l.problemMsg, gen)
	}
	resolved := condition(string(gwapiv1.ListenerConditionResolvedRefs), true, string(gwapiv1.ListenerReasonResolvedRefs), "all references resolved", gen)
	if l.refProblem != "" {
		resolved = condition(string(gwapiv1.ListenerConditionResolvedRefs), false, l.refProblem, l.refProblemMsg, gen)
	}
	if l.unservedMsg != "" {
		programmed = condition(string(gwapiv1.ListenerConditionProgrammed), false, string(gwapiv1.ListenerReasonInvalid), l.unservedMsg, gen)
	}
	conflicted := condition(string(gwapiv1.ListenerConditionConflicted), false, string(gwapiv1.ListenerReasonNoConflicts), "no conflicts", gen)
	if l.conflict != "" {
		conflicted = condition(string(gwapiv1.ListenerConditionConflicted), true, l.conflict, l.conflictMsg, gen)
		programmed = condition(string(gwapiv1.ListenerConditionProgrammed), false, string(gwapiv1.ListenerReasonInvalid), l.conflictMsg, gen)
	}
	st.Conditions = []metav1.Condition{accepted, programmed, resolved, conflicted}
	return st
}

func ptrTo[T any](v T) *T { return &v }
