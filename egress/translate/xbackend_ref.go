package translate

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// OriginXBackend is the ClusterOrigin kind of an XBackend's clusters: Envoy's cluster
// metadata and the audit log say XBackend, and nothing that looks up Backends by the
// origin's name finds a Backend that happens to share it.
const OriginXBackend = "XBackend"

// xbackendSlot is one XBackend of the input and, once computed, its translation. XBackends
// have an index of their own: a Backend of the same namespace and name is another object.
type xbackendSlot struct {
	name types.NamespacedName
	x    *gwapixv1alpha1.XBackend
	// translated is set once translateXBackend ran.
	translated bool
	conv       xbackendConversion
	// problem is why the XBackend cannot be used: its conversion's, or the Backend
	// pipeline's (either Accepted or ResolvedRefs of the Backend), in the XBackend's words.
	problem *refError
	// tb is the equivalent Backend's translation, its clusters and secrets renamed.
	tb *translatedBackend
	// gateways are the Gateways whose routes reference the XBackend.
	gateways map[types.NamespacedName]bool
	// routed: HTTPRoutes send requests to it; streamed: TLSRoutes or TCPRoutes pass
	// connections through to it.
	routed, streamed bool
}

func indexXBackends(in []gwapixv1alpha1.XBackend) map[types.NamespacedName]*xbackendSlot {
	out := make(map[types.NamespacedName]*xbackendSlot, len(in))
	for i := range in {
		n := nameOf(&in[i])
		out[n] = &xbackendSlot{name: n, x: &in[i]}
	}
	return out
}

// translateXBackend converts the XBackend and translates the equivalent Backend, once
// per translation. It bypasses the Backend memo (keyed by Backend name) on purpose: a
// Backend and an XBackend of one name must never share a cached translation.
func (t *translator) translateXBackend(s *xbackendSlot) *xbackendSlot {
	if s.translated {
		return s
	}
	s.translated = true
	conv, e := convertXBackend(s.x)
	if e != nil {
		s.problem = e
		return s
	}
	s.conv = conv
	bs := &backendSlot{name: s.name, b: conv.b}
	s.tb = t.buildBackend(bs)
	if cause := firstProblem(s.tb); cause != nil {
		s.problem = &refError{reason: cause.reason, msg: inXBackendTerms(cause.msg)}
		return s
	}
	rebrandXBackend(s)
	return s
}

func firstProblem(tb *translatedBackend) *refError {
	if tb.problem != nil {
		return tb.problem
	}
	return tb.refProblem
}

// xbackendFields rewrites the Backend pipeline's field paths into the XBackend's.
var xbackendFields = strings.NewReplacer(
	"spec.destination.fqdn.protocol", "spec.protocol",
	"spec.destination.fqdn.tls", "spec.tls",
	"spec.destination.fqdn", hostnameField,
	"spec.destination.ports[0]", "spec.port",
	"tls.caCertificates", "spec.tls.validation.caCertificateRefs",
	"tls.clientCertificate", "spec.tls.clientCertificateRef",
)

func inXBackendTerms(msg string) string { return xbackendFields.Replace(msg) }

// rebrandXBackend names the XBackend's clusters and its own CA bundle after the XBackend,
// so they can never collide with those of a Backend of the same namespace and name.
// The clusters were just built for this translation alone: changing them is safe.
func rebrandXBackend(s *xbackendSlot) {
	backendCA := "ca/" + s.name.String() + "/backend"
	for i := range s.tb.ports {
		pc := &s.tb.ports[i]
		c := pc.cluster
		c.Name = "xbackend/" + s.name.String() + "/" + pc.port
		c.Origin.Kind = OriginXBackend
		if c.TLS != nil && c.TLS.CASecret == backendCA {
			c.TLS.CASecret = "ca/" + s.name.String() + "/xbackend"
		}
		for j := range pc.secrets {
			if pc.secrets[j].Name == backendCA {
				pc.secrets[j].Name = "ca/" + s.name.String() + "/xbackend"
			}
		}
	}
}

// xbackendTarget finds a referenced XBackend, records the referring Gateway as one of
// its parents, and checks the port and that the XBackend is usable. It knows nothing of
// the route's kind: HTTPRoute, TLSRoute and TCPRoute resolvers share it and add their
// own protocol check.
func (t *translator) xbackendTarget(g *gatewayContext, n types.NamespacedName, port *gwapiv1.PortNumber) (*xbackendSlot, *refError) {
	s, ok := t.xbackends[n]
	if !ok {
		return nil, newRefError(string(gwapiv1.RouteReasonBackendNotFound), "XBackend %s not found", n)
	}
	if s.gateways == nil {
		s.gateways = map[types.NamespacedName]bool{}
	}
	s.gateways[nameOf(g.gw)] = true
	t.translateXBackend(s)
	if port != nil && int32(*port) != int32(s.x.Spec.Port.Port) {
		return nil, newRefError(string(gwapiv1.RouteReasonBackendNotFound), "XBackend %s has no port %d (its spec.port.port is %d)", n, *port, s.x.Spec.Port.Port)
	}
	if s.problem != nil {
		return nil, newRefError(ReasonInvalidBackend, "XBackend %s cannot be used (%s): %s", n, s.problem.reason, s.problem.msg)
	}
	return s, nil
}

// xbackendRef resolves an HTTPRoute backendRef to an XBackend into its cluster. An
// XBackend of protocol TCP carries no HTTP.
func (t *translator) xbackendRef(g *gatewayContext, n types.NamespacedName, port *gwapiv1.PortNumber) (*ir.Cluster, []ir.Secret, *refError) {
	s, e := t.xbackendTarget(g, n, port)
	if e != nil {
		return nil, nil, e
	}
	if s.conv.tcp || len(s.tb.ports) == 0 {
		return nil, nil, newRefError(string(gwapiv1.RouteReasonUnsupportedProtocol), "XBackend %s has spec.protocol TCP: an HTTPRoute sends HTTP, so it needs HTTP, HTTP11, HTTP2, H2C, GRPC or MCP", n)
	}
	s.routed = true
	pc := s.tb.ports[0]
	return pc.cluster, pc.secrets, nil
}
