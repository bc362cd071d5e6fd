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
// from is the same as the IR now and its references resolve as before (isFresh false),
// leaving the memo's entry as it is; otherwise they build and remember the IR they built
// from (isFresh true). A reference that no longer resolves is never reused: the build
// runs and reports the error it always would. Each kind of resource says only what of
// the IR it keeps and compares (a unitKind); reuse is the same step for all of them.

// unitKind is how one kind of resource is reused: what of the IR its entry keeps (a
// shallow copy, whose slices and pointers are the IR's own: Cache says why that is
// safe), when the IR now is the same as the kept one, and how the resource is built.
type unitKind[In, Out any] struct {
	keep  func(*In) *In
	same  func(kept, now *In) bool
	build func(*In) (Out, error)
}

// reuse gives e's resource when there is one (ok), its IR is the same as in and
// resolves tells its references resolve as before, and builds otherwise. store keeps a
// fresh build in the Gateway's memo; nil when building without a Cache
// (gatewayMemo.keeps).
func reuse[In, Out any](e memoEntry[In, Out], ok bool, in *In, k unitKind[In, Out], resolves func() bool, store func(memoEntry[In, Out])) (Out, bool, error) {
	if ok && k.same(e.in, in) && resolves() {
		return e.out, false, nil
	}
	src := in
	if store != nil {
		src = k.keep(in)
	}
	out, err := k.build(src)
	if err == nil && store != nil {
		store(memoEntry[In, Out]{in: src, out: out})
	}
	return out, true, err
}

func (b *builder) cachedListener(_ int, l *ir.Listener) (*listenerv3.Listener, bool, error) {
	// over xDS the listener does not carry its routes: the head is what it is built from
	k := unitKind[ir.Listener, *listenerv3.Listener]{keep: headOf, same: equalListenerHead, build: b.listener}
	e, ok := b.memo.listeners[l.Name]
	var store func(memoEntry[ir.Listener, *listenerv3.Listener])
	if b.memo.listeners != nil {
		store = func(e memoEntry[ir.Listener, *listenerv3.Listener]) { b.memo.listeners[l.Name] = e }
	}
	return reuse(e, ok, l, k, func() bool { return b.listenerRefsResolve(l) }, store)
}

// cachedCluster builds the cluster at place i of the IR's clusters.
func (b *builder) cachedCluster(i int, cp **ir.Cluster) (*clusterv3.Cluster, bool, error) {
	c := *cp
	k := unitKind[ir.Cluster, *clusterv3.Cluster]{keep: shallow[ir.Cluster], same: equalClusterSettings, build: b.cluster}
	e, ok := b.memo.clusters.entry(i)
	return reuse(e, ok, c, k, func() bool { return b.secretsAsBefore || b.clusterRefsResolve(c) }, b.memo.clusters.keeper(i))
}

// cachedEndpoints compares only what the load assignment is built from: the cluster's
// name and endpoints.
func (b *builder) cachedEndpoints(i int, cp **ir.Cluster) (*endpointv3.ClusterLoadAssignment, bool, error) {
	c := *cp
	k := unitKind[ir.Cluster, *endpointv3.ClusterLoadAssignment]{keep: endpointsOf, same: equalEndpoints, build: loadAssignment}
	e, ok := b.memo.endpoints.entry(i)
	return reuse(e, ok, c, k, always, b.memo.endpoints.keeper(i))
}

func (b *builder) cachedSecret(i int, s *ir.Secret) (*tlsv3.Secret, bool, error) {
	k := unitKind[ir.Secret, *tlsv3.Secret]{keep: shallow[ir.Secret], same: (*ir.Secret).Equal, build: secret}
	e, ok := b.memo.secrets.entry(i)
	return reuse(e, ok, s, k, always, b.memo.secrets.keeper(i))
}

// cachedRoutes takes the last build's table when the listener's tables are as they were,
// and otherwise assembles it from the virtual hosts that are (route_hosts.go). It
// validates what it built itself, so it never reports a table as fresh.
func (b *builder) cachedRoutes(_ int, l *ir.Listener) (*routev3.RouteConfiguration, bool, error) {
	e, ok := b.memo.routes[l.Name]
	if ok && equalListener(e.in, l) && b.targetsResolve(e.targets) {
		return e.out, false, nil
	}
	if !b.memo.keeps() {
		out, err := b.routeConfiguration(l)
		return out, true, err
	}
	var reuse map[string]hostEntry
	if ok && e.tail == tailOf(l) {
		reuse = e.hosts
	}
	t, err := b.routeTable(l, reuse, len(e.targets))
	if err == nil {
		err = t.validate()
	}
	if err != nil {
		return nil, false, err
	}
	b.memo.routes[l.Name] = t.entry
	return t.out, false, nil
}

func always() bool { return true }

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
	s, ok := b.secrets.get(name)
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
	if c, ok := b.clusterNamed(name); ok {
		t.exists, t.protocol = true, c.Protocol
	}
	return t
}

// targetsResolve tells whether every cluster a route configuration named exists, or
// not, as it did, with the same protocol.
func (b *builder) targetsResolve(targets []clusterProtocol) bool {
	for _, t := range targets {
		c, ok := b.clusterNamed(t.name)
		if ok != t.exists || ok && c.Protocol != t.protocol {
			return false
		}
	}
	return true
}

// keeps tells whether the build is remembered: a builder without a Cache has an empty
// memo, whose nil maps find nothing and keep nothing.
func (m *gatewayMemo) keeps() bool { return m.routes != nil }

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

// endpointsOf is what a load assignment is built from: the cluster's name and endpoints.
func endpointsOf(c *ir.Cluster) *ir.Cluster {
	return &ir.Cluster{Name: c.Name, Endpoints: c.Endpoints}
}
