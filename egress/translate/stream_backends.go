package translate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// streamClusterPrefix names the clusters of Services a stream route passes connections
// to; a Backend's stream cluster is its CONNECT tunnel cluster (forward_proxy.go), which
// is the same thing: raw TCP to the vetted addresses of one port.
const streamClusterPrefix = "stream/service/"

// streamBackends resolves every backendRef of a stream route into weighted clusters
// (joining the Gateway), the weight of those that are invalid, and the route's
// ResolvedRefs.
func (t *translator) streamBackends(g *gatewayContext, r *streamRoute) ([]ir.WeightedCluster, uint32, refStatus) {
	var out []ir.WeightedCluster
	var invalid uint32
	var st refStatus
	for i, refs := range r.rules {
		for j, ref := range refs {
			weight := uint32(1)
			if ref.Weight != nil {
				weight = uint32(*ref.Weight)
			}
			if weight == 0 {
				continue
			}
			c, rerr := t.streamCluster(g, r, ref.BackendObjectReference)
			if rerr != nil {
				st.fail(rerr.reason, fmt.Sprintf("rules[%d].backendRefs[%d]: %s", i, j, rerr.msg))
				invalid += weight
				continue
			}
			g.clusters[c.Name] = c
			out = append(out, ir.WeightedCluster{Cluster: c.Name, Weight: weight})
		}
	}
	return out, invalid, st
}

// streamCluster is the TCP cluster one backendRef of a stream route names.
func (t *translator) streamCluster(g *gatewayContext, r *streamRoute, ref gwapiv1.BackendObjectReference) (*ir.Cluster, *refError) {
	target, kind, rerr := t.backendRefTarget(string(r.kind), r.meta.Namespace, ref)
	if rerr != nil {
		return nil, rerr
	}
	switch kind {
	case targetService:
		return t.serviceStreamCluster(target, ref.Port)
	case targetXBackend:
		return t.xbackendStreamCluster(g, r, target, ref.Port)
	}
	return t.backendStreamCluster(g, r, target, ref.Port)
}

// streamRefStatus checks the backendRefs of a route that attaches nowhere: kind,
// ReferenceGrant and existence, building nothing (as unattachedRefStatus does).
func (t *translator) streamRefStatus(r *streamRoute) refStatus {
	var st refStatus
	for i, refs := range r.rules {
		for j, ref := range refs {
			target, kind, rerr := t.backendRefTarget(string(r.kind), r.meta.Namespace, ref.BackendObjectReference)
			if rerr == nil {
				rerr = t.checkRefExists(target, kind)
			}
			if rerr != nil {
				st.fail(rerr.reason, fmt.Sprintf("rules[%d].backendRefs[%d]: %s", i, j, rerr.msg))
			}
		}
	}
	return st
}

// wantStreamProtocol is the Backend port protocol a stream route kind carries.
func wantStreamProtocol(kind gwapiv1.Kind) egressv1alpha1.PortProtocol {
	if kind == tlsRouteKind.Kind {
		return egressv1alpha1.PortProtocolTLS
	}
	return egressv1alpha1.PortProtocolTCP
}

// backendStreamCluster is the tunnel cluster of the Backend port a stream route names:
// a TLSRoute needs a port of protocol TLS, a TCPRoute one of protocol TCP. The port's
// TLS settings do not apply (the client's TLS goes end to end); the Backend's
// Accepted condition says so.
func (t *translator) backendStreamCluster(g *gatewayContext, r *streamRoute, n types.NamespacedName, port *gwapiv1.PortNumber) (*ir.Cluster, *refError) {
	s, ok := t.backends[n]
	if !ok {
		return nil, newRefError(string(gwapiv1.RouteReasonBackendNotFound), "Backend %s not found", n)
	}
	tb := t.translateBackend(s)
	p, rerr := pickStreamPort(tb.b, port, r.kind)
	if rerr != nil {
		return nil, rerr
	}
	if !tb.usable() {
		cause := tb.problem
		if cause == nil {
			cause = tb.refProblem
		}
		return nil, newRefError(ReasonInvalidBackend, "Backend %s cannot be used (%s): %s", n, cause.reason, cause.msg)
	}
	c, rerr := t.streamTunnelCluster(tb, p)
	if rerr != nil {
		return nil, rerr
	}
	tb.referenced = true
	tb.streamed = true
	t.noteBackendGateway(tb, g.out.Name)
	return c, nil
}

// pickStreamPort finds the port a stream route's backendRef names (it may be omitted
// when the Backend has one port) and checks its protocol.
func pickStreamPort(b *egressv1alpha1.Backend, port *gwapiv1.PortNumber, kind gwapiv1.Kind) (egressv1alpha1.BackendPort, *refError) {
	found, e := findBackendPort(b, port)
	if e != nil {
		return egressv1alpha1.BackendPort{}, e
	}
	if want := wantStreamProtocol(kind); found.Protocol != want {
		return egressv1alpha1.BackendPort{}, newRefError(ReasonInvalidBackend, "Backend %s port %d has protocol %s; a %s needs a port of protocol %s", nameOf(b), found.Port, found.Protocol, kind, want)
	}
	return *found, nil
}

// streamTunnelCluster is tunnelCluster for any destination type: a Backend naming a
// Service gets that Service's vetted endpoints.
func (t *translator) streamTunnelCluster(tb *translatedBackend, p egressv1alpha1.BackendPort) (*ir.Cluster, *refError) {
	if tb.dest.service == nil || tb.dest.hostname != "" {
		return t.tunnelCluster(tb, p), nil
	}
	eps, rerr := t.endpoints(tb.dest, p)
	if rerr != nil {
		return nil, newRefError(ReasonInvalidBackend, "Backend %s: %s", tb.key(), rerr.msg)
	}
	c := t.tunnelCluster(tb, p)
	c.Endpoints = eps
	return c, nil
}

// serviceStreamCluster is raw TCP to the ready (and allowed) endpoints of a Service
// port, or to the vetted addresses of an ExternalName Service. A BackendTLSPolicy does
// not apply: the connection's TLS, if any, is the client's.
func (t *translator) serviceStreamCluster(n types.NamespacedName, port *gwapiv1.PortNumber) (*ir.Cluster, *refError) {
	if port == nil {
		return nil, newRefError(string(gwapiv1.RouteReasonUnsupportedValue), "backendRef.port is required for a Service")
	}
	eps, rerr := t.serviceAddresses(n, int32(*port))
	if rerr != nil {
		return nil, rerr
	}
	return &ir.Cluster{
		Name:      fmt.Sprintf("%s%s/%d", streamClusterPrefix, n, *port),
		Origin:    ir.ClusterOrigin{Kind: ir.OriginService, Namespace: n.Namespace, Name: n.Name, Port: uint32(*port)},
		Endpoints: eps,
		Protocol:  ir.ProtocolTCP,
	}, nil
}

// xbackendStreamCluster is raw TCP to the vetted addresses of an XBackend's hostname and
// port. Its spec.protocol must be TCP or unset (a stream route carries no HTTP); its
// spec.tls, which asks the gateway to originate TLS, does not apply: the client's TLS,
// if any, goes end to end.
func (t *translator) xbackendStreamCluster(g *gatewayContext, r *streamRoute, n types.NamespacedName, port *gwapiv1.PortNumber) (*ir.Cluster, *refError) {
	s, e := t.xbackendTarget(g, n, port)
	if e != nil {
		return nil, e
	}
	if p := s.x.Spec.Protocol; p != nil && *p != gwapixv1alpha1.BackendProtocolTCP {
		return nil, newRefError(ReasonInvalidBackend, "XBackend %s has spec.protocol %s: a %s passes connections through, so it needs TCP or no protocol", n, *p, r.kind)
	}
	s.streamed = true
	p := uint32(s.x.Spec.Port.Port)
	return &ir.Cluster{
		Name:      fmt.Sprintf("%sxbackend/%s/%d", tunnelClusterPrefix, n, p),
		Origin:    ir.ClusterOrigin{Kind: OriginXBackend, Namespace: n.Namespace, Name: n.Name, Port: p},
		Endpoints: vettedEndpoints(t.resolution(s.tb.dest.hostname), p),
		Protocol:  ir.ProtocolTCP,
	}, nil
}
