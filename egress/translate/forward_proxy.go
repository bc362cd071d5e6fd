package translate

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// Forward-proxy listeners (the README's "Calling from unchanged applications"). A
// Gateway names, in the ForwardProxyAnnotation, the HTTP listeners that also serve
// applications configured with HTTP_PROXY and HTTPS_PROXY:
//
//   - absolute-form requests ("GET http://api.example.com/x") are ordinary HTTP
//     requests to Envoy and get the same routes as on any HTTP listener;
//   - "CONNECT host:port" opens a TCP tunnel only when a Backend the caller may use
//     declares that hostname (FQDN) or address (IP) and a port of protocol TLS or TCP
//     with that number. The tunnel goes to the DNS guard's vetted addresses for the
//     name, never to what the name resolves to elsewhere, and the gateway neither
//     originates nor terminates TLS on it. Anything else gets 403.
//
// Who may use a Backend follows the Gateway's tenancy: with isolation on, the callers of
// the Backend's namespace and of the namespaces its namespace admits with a
// ReferenceGrant from Pods:
//
//	kind: ReferenceGrant
//	metadata: {namespace: team-b}          # the Backend's namespace decides
//	spec:
//	  from: [{group: "", kind: Pod, namespace: team-a}]
//	  to:   [{group: egress.portcullis.io, kind: Backend}]   # or one Backend by name
//
// With isolation off, every caller may use every Backend.
//
// An annotation rather than a new protocol keeps the listener a plain Gateway API HTTP
// listener (HTTPRoutes attach to it as to any other, conformance tools understand it),
// and it is the Gateway owner's decision, who also decides who reaches the listener.
const (
	// ForwardProxyAnnotation lists, comma-separated, the names of the Gateway's HTTP
	// listeners that are forward proxies.
	ForwardProxyAnnotation = "portcullis.io/forward-proxy"
	// ConditionForwardProxy is the Gateway condition that says which listeners are
	// forward proxies, present when the annotation is.
	ConditionForwardProxy = "portcullis.io/ForwardProxy"
	// Reasons of ConditionForwardProxy.
	ReasonForwardProxy      = "ForwardProxy"
	ReasonUnknownListener   = "UnknownListener"
	ReasonNotAnHTTPListener = "NotAnHTTPListener"
	// tunnelClusterPrefix names the clusters of CONNECT tunnels.
	tunnelClusterPrefix = "tunnel/"
)

// forwardProxies marks the listeners the annotation names and returns the Gateway's
// ConditionForwardProxy, or nil when the Gateway has no annotation. A name that is no
// listener of the Gateway, or a listener that is not HTTP, makes the condition False
// with the reason and is not served as a proxy; the names that are right still are.
func forwardProxies(g *gatewayContext) *metav1.Condition {
	value, set := g.gw.Annotations[ForwardProxyAnnotation]
	if !set {
		return nil
	}
	byName := make(map[string]*listenerContext, len(g.listeners))
	for _, l := range g.listeners {
		byName[string(l.spec.Name)] = l
	}
	var proxies, problems []string
	reason := ReasonForwardProxy
	for _, name := range strings.Split(value, ",") {
		name = strings.TrimSpace(name)
		l, ok := byName[name]
		switch {
		case !ok:
			reason = ReasonUnknownListener
			problems = append(problems, fmt.Sprintf("%q is not a listener of this Gateway", name))
		case l.spec.Protocol != gwapiv1.HTTPProtocolType:
			if reason == ReasonForwardProxy {
				reason = ReasonNotAnHTTPListener
			}
			problems = append(problems, fmt.Sprintf("listener %s has protocol %s; a forward proxy must be an HTTP listener", name, l.spec.Protocol))
		default:
			l.forwardProxy = true
			proxies = append(proxies, fmt.Sprintf("%s (port %d)", name, l.spec.Port))
		}
	}
	msg := "no listener is a forward proxy"
	if len(proxies) > 0 {
		msg = "forward proxy listeners: " + strings.Join(proxies, ", ") +
			"; they accept absolute-form requests and CONNECT to the TLS and TCP ports of Backends each caller may use (every listener on the same port serves as one)"
	}
	if len(problems) > 0 {
		msg = "annotation " + ForwardProxyAnnotation + ": " + strings.Join(problems, "; ") + ". " + msg
	}
	c := condition(ConditionForwardProxy, len(problems) == 0, reason, msg, g.gw.Generation)
	return &c
}

// tunnelTarget is one Backend port a CONNECT may open: its authority (Domain, Port),
// the cluster it goes to, and the caller namespaces that may use it.
type tunnelTarget struct {
	domain  string
	port    uint32
	cluster *ir.Cluster
	tb      *translatedBackend
	callers []string
}

// tunnelTargets lists every usable Backend port of protocol TLS or TCP whose destination
// is an FQDN or an IP, in Backend name order; computed once per translation.
func (t *translator) tunnelTargets() []tunnelTarget {
	if t.tunnels != nil {
		return *t.tunnels
	}
	slots := make([]*backendSlot, 0, len(t.backends))
	for _, s := range t.backends {
		if tunnelCandidate(s.b) {
			slots = append(slots, s)
		}
	}
	sort.Slice(slots, func(i, j int) bool { return lessName(slots[i].name, slots[j].name) })
	out := []tunnelTarget{}
	for _, s := range slots {
		out = append(out, t.backendTunnels(s)...)
	}
	t.tunnels = &out
	return out
}

// tunnelCandidate tells, from the spec alone, whether a Backend may offer tunnels.
func tunnelCandidate(b *egressv1alpha1.Backend) bool {
	d := b.Spec.Destination
	if d.FQDN == nil && d.IP == nil {
		return false
	}
	for _, p := range d.Ports {
		if tunnelPort(p) {
			return true
		}
	}
	return false
}

func tunnelPort(p egressv1alpha1.BackendPort) bool {
	return p.Protocol == egressv1alpha1.PortProtocolTLS || p.Protocol == egressv1alpha1.PortProtocolTCP
}

// backendTunnels is the tunnel of each TLS and TCP port of a usable Backend.
func (t *translator) backendTunnels(s *backendSlot) []tunnelTarget {
	tb := t.translateBackend(s)
	if !tb.usable() {
		return nil
	}
	domain := tb.dest.hostname
	if tb.dest.ip.IsValid() {
		domain = ipDomain(tb.dest.ip)
	}
	callers := t.grantedCallers(s.name.Namespace, egressv1alpha1.GroupVersion.Group, egressv1alpha1.BackendKind, s.name.Name)
	var out []tunnelTarget
	for _, p := range tb.b.Spec.Destination.Ports {
		if tunnelPort(p) {
			out = append(out, tunnelTarget{domain: domain, port: uint32(p.Port), cluster: t.tunnelCluster(tb, p), tb: tb, callers: callers})
		}
	}
	return out
}

// ipDomain is how an address appears as a CONNECT authority's host: IPv6 in brackets.
func ipDomain(a netip.Addr) string {
	if a.Is6() {
		return "[" + a.String() + "]"
	}
	return a.String()
}

// tunnelCluster carries a tunnel's bytes to the vetted addresses of one Backend port:
// TCP, no TLS, no HTTP settings; the connection-pool extension's connect timeout and
// limits still apply.
func (t *translator) tunnelCluster(tb *translatedBackend, p egressv1alpha1.BackendPort) *ir.Cluster {
	var ext ir.Cluster
	_, _ = applyExtensions(&ext, tb.b.Spec.Extensions) // already accepted: tb is usable
	eps, _ := t.endpoints(tb.dest, p)                  // FQDN or IP: never an error
	return &ir.Cluster{
		Name:           tunnelClusterPrefix + tb.key() + "/" + p.Name,
		Origin:         ir.ClusterOrigin{Kind: ir.OriginBackend, Namespace: tb.b.Namespace, Name: tb.b.Name, Port: uint32(p.Port)},
		Endpoints:      eps,
		Protocol:       ir.ProtocolTCP,
		ConnectTimeout: ext.ConnectTimeout,
		CircuitBreaker: ext.CircuitBreaker,
	}
}

// tunnelTable picks, among targets, those a caller namespace may use ("" for a caller
// that may use every Backend), one per authority: the caller's own Backend first, then
// the first by name.
func tunnelTable(targets []tunnelTarget, ns string) []tunnelTarget {
	type authority struct {
		domain string
		port   uint32
	}
	taken := map[authority]bool{}
	var out []tunnelTarget
	for _, own := range []bool{true, false} {
		for _, tt := range targets {
			a := authority{tt.domain, tt.port}
			if taken[a] || (tt.tb.b.Namespace == ns) != own || ns != "" && !contains(tt.callers, ns) {
				continue
			}
			taken[a] = true
			out = append(out, tt)
		}
	}
	return out
}

// proxyVirtualHosts is the route table of a forward-proxy listener for one caller
// namespace: the virtual hosts of its routes plus one for every tunnel domain (carrying
// the routes of the wildcards that cover it, so plain HTTP is served as before), each
// with its tunnels. The tunnels' clusters join the Gateway.
func (t *translator) proxyVirtualHosts(g *gatewayContext, port uint32, hosts map[string][]*routeEntry, tunnels []tunnelTarget, prior hostTable) hostTable {
	all := make(map[string][]*routeEntry, len(hosts)+len(tunnels))
	for d, entries := range hosts {
		all[d] = entries
	}
	byDomain := map[string][]ir.Tunnel{}
	for _, tt := range tunnels {
		if _, ok := all[tt.domain]; !ok {
			all[tt.domain] = nil
		}
		byDomain[tt.domain] = append(byDomain[tt.domain], ir.Tunnel{Port: tt.port, Cluster: tt.cluster.Name, NoAddress: len(tt.cluster.Endpoints) == 0})
		t.useTunnel(g, tt)
	}
	vhosts := virtualHosts(port, all, prior)
	for i := range vhosts {
		ts := byDomain[vhosts[i].Domains[0]]
		sort.Slice(ts, func(a, b int) bool { return ts[a].Port < ts[b].Port })
		if !slices.Equal(ts, vhosts[i].Tunnels) { // a kept host keeps its own when equal
			vhosts[i].Tunnels = ts
		}
	}
	return hostTable{entries: all, vhosts: vhosts}
}

// useTunnel adds a tunnel's cluster to the Gateway and counts its Backend as used by it.
func (t *translator) useTunnel(g *gatewayContext, tt tunnelTarget) {
	g.record.noteTunnel(tt.cluster.Name)
	g.clusters[tt.cluster.Name] = tt.cluster
	tt.tb.referenced = true
	tt.tb.tunneled = true
	t.noteBackendGateway(tt.tb, g.out.Name)
}

// tunnelNote is what a Backend's Accepted condition adds when forward proxies open
// tunnels to it, or TLSRoutes and TCPRoutes pass connections to it: TLS settings, which
// the gateway applies to HTTPRoutes, do not apply there.
func tunnelNote(tb *translatedBackend) string {
	if !tb.tunneled && !tb.streamed {
		return ""
	}
	var ports []string
	hasTLS := false
	for _, p := range tb.b.Spec.Destination.Ports {
		if tunnelPort(p) {
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
			hasTLS = hasTLS || p.Protocol == egressv1alpha1.PortProtocolTLS
		}
	}
	var who []string
	if tb.tunneled {
		who = append(who, "forward proxies open CONNECT tunnels")
	}
	if tb.streamed {
		who = append(who, "TLSRoutes and TCPRoutes pass connections through")
	}
	msg := "; " + strings.Join(who, " and ") + " to port(s) " + strings.Join(ports, ", ")
	if hasTLS {
		msg += "; on a tunnel the client's TLS goes end to end: " + tb.dest.field + ".tls and any BackendTLSPolicy (TLS origination, certificates, SNI) do not apply to tunnels"
	}
	return msg
}

// grantedCallers lists the caller namespaces that may use an object: its own namespace,
// then, sorted, those its namespace admits with a ReferenceGrant from Pods.
func (t *translator) grantedCallers(namespace, group, kind, name string) []string {
	seen := map[string]bool{namespace: true}
	out := []string{namespace}
	for _, g := range t.grants {
		if g.Namespace != namespace {
			continue
		}
		for _, f := range g.Spec.From {
			ns := string(f.Namespace)
			if f.Group != "" || string(f.Kind) != callerGrantKind || seen[ns] {
				continue
			}
			if grantAllows(g, crossRef{fromKind: callerGrantKind, fromNamespace: ns, toGroup: group, toKind: kind, toNamespace: namespace, toName: name}) {
				seen[ns] = true
				out = append(out, ns)
			}
		}
	}
	sort.Strings(out[1:])
	return out
}
