package envoyconfig

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// The cached* builders return the message of the last build when the IR it was built
// from equals the IR now and its references resolve as before (isFresh false), leaving
// the memo's entry as it is; otherwise they build and remember the IR they built from
// (isFresh true). A reference that no longer resolves is never reused: the build runs
// and reports the error it always would. What is remembered is a shallow copy: the
// struct, whose slices and pointers are the IR's own (Cache says why that is safe).

func (b *builder) cachedListener(l *ir.Listener) (*listenerv3.Listener, bool, error) {
	if e, ok := b.prev.findListener(l.Name); ok && equalListenerHead(e.listener, l) && b.listenerRefsResolve(l) {
		return e.out, false, nil
	}
	src := l
	if b.next != nil {
		src = headOf(l) // over xDS the listener does not carry its routes
	}
	out, err := b.listener(src)
	if err == nil && b.next != nil {
		b.next.listeners[l.Name] = memoEntry[*listenerv3.Listener]{listener: src, out: out}
	}
	return out, true, err
}

// cachedRoutes takes the last build's table when the listener's tables are as they were,
// and otherwise assembles it from the virtual hosts that are (route_hosts.go). It
// validates what it built itself, so it never reports a table as fresh.
func (b *builder) cachedRoutes(l *ir.Listener) (*routev3.RouteConfiguration, bool, error) {
	e, ok := b.prev.findRoutes(l.Name)
	if ok && equalListener(e.listener, l) && b.targetsResolve(e.targets) {
		return e.out, false, nil
	}
	if b.next == nil {
		out, err := b.routeConfiguration(l)
		return out, true, err
	}
	var reuse map[string]hostEntry
	if ok && e.tail == tailOf(l) {
		reuse = e.hosts
	}
	t, err := b.routeTable(l, reuse)
	if err == nil {
		err = t.validate()
	}
	if err != nil {
		return nil, false, err
	}
	b.next.routes[l.Name] = t.entry
	return t.out, false, nil
}

func (b *builder) cachedCluster(c *ir.Cluster) (*clusterv3.Cluster, bool, error) {
	if e, ok := b.prev.findCluster(c.Name); ok && equalClusterSettings(e.cluster, c) && b.clusterRefsResolve(c) {
		return e.out, false, nil
	}
	src := c
	if b.next != nil {
		src = shallow(c)
	}
	out, err := b.cluster(src)
	if err == nil && b.next != nil {
		b.next.clusters[c.Name] = memoEntry[*clusterv3.Cluster]{cluster: src, out: out}
	}
	return out, true, err
}

// cachedEndpoints compares only what the load assignment is built from: the cluster's
// name and endpoints.
func (b *builder) cachedEndpoints(c *ir.Cluster) (*endpointv3.ClusterLoadAssignment, bool, error) {
	if e, ok := b.prev.findEndpoints(c.Name); ok && e.cluster.Name == c.Name && equalSlice(e.cluster.Endpoints, c.Endpoints) {
		return e.out, false, nil
	}
	src := c
	if b.next != nil {
		src = &ir.Cluster{Name: c.Name, Endpoints: c.Endpoints}
	}
	out, err := loadAssignment(src)
	if err == nil && b.next != nil {
		b.next.endpoints[c.Name] = memoEntry[*endpointv3.ClusterLoadAssignment]{cluster: src, out: out}
	}
	return out, true, err
}

func (b *builder) cachedSecret(s *ir.Secret) (*tlsv3.Secret, bool, error) {
	if e, ok := b.prev.findSecret(s.Name); ok && equalSecret(e.secret, s) {
		return e.out, false, nil
	}
	src := s
	if b.next != nil {
		src = shallow(s)
	}
	out, err := secret(src)
	if err == nil && b.next != nil {
		b.next.secrets[s.Name] = memoEntry[*tlsv3.Secret]{secret: src, out: out}
	}
	return out, true, err
}

// listenerRefsResolve tells whether the listener's certificates are still defined as
// certificates.
func (b *builder) listenerRefsResolve(l *ir.Listener) bool {
	if !b.streamTargetsResolve(l) {
		return false
	}
	if l.TLS == nil {
		return true
	}
	for _, name := range l.TLS.CertificateSecrets {
		if !b.hasSecret(name, ir.SecretTLSCertificate) {
			return false
		}
	}
	return true
}

// clusterRefsResolve tells whether every secret the cluster names is still defined with
// the kind it needs.
func (b *builder) clusterRefsResolve(c *ir.Cluster) bool {
	if t := c.TLS; t != nil {
		if t.ClientCertificateSecret != "" && !b.hasSecret(t.ClientCertificateSecret, ir.SecretTLSCertificate) {
			return false
		}
		if t.CASecret != "" && !b.hasSecret(t.CASecret, ir.SecretCACertificate) {
			return false
		}
	}
	return c.Credential == nil || b.hasSecret(c.Credential.Secret, ir.SecretGeneric)
}

func (b *builder) hasSecret(name string, kind ir.SecretKind) bool {
	s, ok := b.secrets[name]
	return ok && s.Kind == kind
}

// hostTargets lists the clusters a virtual host's tunnels and routes name, whether they
// exist (a route whose backends all weigh 0 does not need them to) and their protocols.
func (b *builder) hostTargets(vh *ir.VirtualHost) []clusterProtocol {
	var out []clusterProtocol
	for _, tn := range vh.Tunnels {
		out = append(out, b.clusterTarget(tn.Cluster))
	}
	for _, r := range vh.Routes {
		for _, wc := range r.Backends {
			out = append(out, b.clusterTarget(wc.Cluster))
		}
	}
	return out
}

// clusterTarget is a named cluster, whether it exists and its protocol.
func (b *builder) clusterTarget(name string) clusterProtocol {
	t := clusterProtocol{name: name}
	if c, ok := b.clusters[name]; ok {
		t.exists, t.protocol = true, c.Protocol
	}
	return t
}

// targetsResolve tells whether every cluster a route configuration named exists, or
// not, as it did, with the same protocol.
func (b *builder) targetsResolve(targets []clusterProtocol) bool {
	for _, t := range targets {
		c, ok := b.clusters[t.name]
		if ok != t.exists || ok && c.Protocol != t.protocol {
			return false
		}
	}
	return true
}

// Lookups in the last build; a nil memo (no Cache, or options changed) has nothing.

func (m *gatewayMemo) findListener(name string) (memoEntry[*listenerv3.Listener], bool) {
	if m == nil {
		return memoEntry[*listenerv3.Listener]{}, false
	}
	e, ok := m.listeners[name]
	return e, ok
}

func (m *gatewayMemo) findRoutes(name string) (routesEntry, bool) {
	if m == nil {
		return routesEntry{}, false
	}
	e, ok := m.routes[name]
	return e, ok
}

func (m *gatewayMemo) findCluster(name string) (memoEntry[*clusterv3.Cluster], bool) {
	if m == nil {
		return memoEntry[*clusterv3.Cluster]{}, false
	}
	e, ok := m.clusters[name]
	return e, ok
}

func (m *gatewayMemo) findEndpoints(name string) (memoEntry[*endpointv3.ClusterLoadAssignment], bool) {
	if m == nil {
		return memoEntry[*endpointv3.ClusterLoadAssignment]{}, false
	}
	e, ok := m.endpoints[name]
	return e, ok
}

func (m *gatewayMemo) findSecret(name string) (memoEntry[*tlsv3.Secret], bool) {
	if m == nil {
		return memoEntry[*tlsv3.Secret]{}, false
	}
	e, ok := m.secrets[name]
	return e, ok
}

// shallow copies a struct: what the memo keeps of an IR value is the value's fields, not
// a pointer into the caller's slice, which would hold that whole slice.
func shallow[T any](v *T) *T {
	out := *v
	return &out
}

// headOf is what a listener resource is built from: the listener without its virtual
// hosts and, of each tenant, the namespace and stream routes (equalListenerHead).
func headOf(l *ir.Listener) *ir.Listener {
	h := *l
	h.VirtualHosts = nil
	h.Tenants = nil
	if l.Tenants != nil {
		h.Tenants = make([]ir.Tenant, len(l.Tenants))
		for i, t := range l.Tenants {
			h.Tenants[i] = ir.Tenant{Namespace: t.Namespace, Streams: t.Streams}
		}
	}
	return &h
}
