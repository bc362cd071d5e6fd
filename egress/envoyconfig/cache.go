package envoyconfig

import (
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// Cache makes Build incremental. It remembers, per Gateway, every resource of the last
// successful build together with the IR it was built from; the next build of that
// Gateway returns the very same message for each IR value that is equal to the one
// remembered and whose references (secrets, target clusters) still resolve the same
// way, and builds the rest. Reuse returns what building again would (the builders are
// pure functions of exactly what is compared), and keeping the message's identity lets
// the xDS server skip validating, encoding and hashing it again.
//
// The IR is remembered, not copied: do not modify IR after building it with a Cache;
// give a changed value new memory, as the translator does (its Results are read-only
// and share memory with later ones). The messages share memory with the IR too (a
// virtual host's domains). Copying every value the build read, to compare the next
// build against, cost a deep copy of each changed cluster and virtual host and kept a
// second copy of the route tables' IR in the manager's heap; sharing lets a value the
// translator handed out again compare equal in one step (ir_equal.go).
//
// A build updates its Gateway's memo in place, writing only the entries it built
// afresh: with ten thousand clusters and one changed, copying every entry into a new
// memo would cost more than the comparisons. The build takes the memo out of the Cache
// while it runs, so a concurrent build of the same Gateway starts from nothing instead
// of sharing it.
//
// Messages returned by a cached build are shared with later builds: treat them as
// read-only, as the xDS server requires anyway. A Cache is safe for concurrent use.
type Cache struct {
	mu       sync.Mutex
	builds   uint64
	gateways map[string]*gatewayMemo
}

// gatewayMemo is one Gateway's last build. Entries are replaced, never modified, and
// every one pairs a message with (a shallow copy of) the IR it was built from; after a
// successful build it holds exactly that build's resources. lastBuild is guarded by
// Cache.mu.
type gatewayMemo struct {
	opts      Options
	lastBuild uint64
	listeners map[string]memoEntry[ir.Listener, *listenerv3.Listener]
	routes    map[string]routesEntry
	// clusters, endpoints and secrets are in the places of the last build's IR lists
	// (placed_memo.go); the endpoints in the clusters'.
	clusters  *placedMemo[ir.Cluster, *clusterv3.Cluster]
	endpoints *placedMemo[ir.Cluster, *endpointv3.ClusterLoadAssignment]
	secrets   *placedMemo[ir.Secret, *tlsv3.Secret]
}

// memoEntry is one resource and the IR it was built from: what of the IR its kind keeps
// (unitKind).
type memoEntry[In, Out any] struct {
	in  *In
	out Out
}

// routesEntry is a route configuration, the listener it was built from, and the
// protocol of every cluster its routes name: a route's settings depend on them. Its
// virtual hosts are kept one by one too, with the tail they were built for
// (route_hosts.go).
type routesEntry struct {
	memoEntry[ir.Listener, *routev3.RouteConfiguration]
	targets []clusterProtocol
	hosts   map[string]hostEntry
	tail    tableTail
}

type clusterProtocol struct {
	name     string
	exists   bool
	protocol ir.UpstreamProtocol
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{gateways: map[string]*gatewayMemo{}} }

// defaultCache serves Build.
var defaultCache = NewCache()

// idleBuilds is how many builds of other Gateways a Gateway's memo outlives, per Gateway
// known: a reconciler builds every Gateway each time, so a memo idle that long belongs to
// a Gateway that is gone.
const idleBuilds = 4

// Build is the package-level Build, reusing the messages of the Gateway's last build.
func (c *Cache) Build(gw ir.Gateway, opts Options) (Resources, error) {
	memo := c.take(gw.Name, opts)
	b, err := newBuilder(gw, opts, false, memo)
	if err != nil {
		c.store(gw.Name, memo)
		return Resources{}, err
	}
	if memo == nil {
		memo = newGatewayMemo(b.opts, &gw)
		b.memo = memo
	}
	b.secretsInPlace = memo.place(b)
	r, err := b.resources()
	if err != nil {
		// The memo now holds this build's messages, validated or not: dropping it keeps
		// the next build of the same IR failing as a cold one would (it starts cold).
		return Resources{}, err
	}
	memo.prune(b)
	c.store(gw.Name, memo)
	return r, nil
}

// Forget drops what Build remembers of a Gateway, once it is gone. Build also forgets a
// Gateway by itself after a while without building it.
func Forget(gateway string) { defaultCache.Forget(gateway) }

// Forget drops what the Cache remembers of a Gateway, once it is gone.
func (c *Cache) Forget(gateway string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.gateways, gateway)
}

// take removes and returns the Gateway's memo when it was made with the same options,
// and drops the memos of Gateways that have not been built for a long time.
func (c *Cache) take(gateway string, opts Options) *gatewayMemo {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.builds++
	limit := uint64(idleBuilds * (len(c.gateways) + 1))
	for name, m := range c.gateways {
		if c.builds-m.lastBuild > limit {
			delete(c.gateways, name)
		}
	}
	m := c.gateways[gateway]
	delete(c.gateways, gateway)
	if m == nil || m.opts != withDefaults(opts) {
		return nil
	}
	return m
}

// store puts a Gateway's memo (nil: none) back after a build.
func (c *Cache) store(gateway string, m *gatewayMemo) {
	if m == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m.lastBuild = c.builds
	c.gateways[gateway] = m
}

// newGatewayMemo returns an empty memo sized for the Gateway's IR.
func newGatewayMemo(opts Options, gw *ir.Gateway) *gatewayMemo {
	return &gatewayMemo{
		opts:      opts,
		listeners: make(map[string]memoEntry[ir.Listener, *listenerv3.Listener], len(gw.Listeners)),
		routes:    make(map[string]routesEntry, len(gw.Listeners)),
		clusters:  &placedMemo[ir.Cluster, *clusterv3.Cluster]{},
		endpoints: &placedMemo[ir.Cluster, *endpointv3.ClusterLoadAssignment]{},
		secrets:   &placedMemo[ir.Secret, *tlsv3.Secret]{},
	}
}

// place puts the entries of clusters, endpoints and secrets in the places of b's lists
// and tells whether the secrets were in them already: the last build had the same
// secret names in the same order.
func (m *gatewayMemo) place(b *builder) (secretsInPlace bool) {
	secretsInPlace = m.secrets != nil && m.secrets.places == b.secrets.places
	m.clusters = m.clusters.placedAs(b.clusters.places)
	m.endpoints = m.endpoints.placedAs(b.clusters.places)
	m.secrets = m.secrets.placedAs(b.secrets.places)
	return secretsInPlace
}

// prune drops the entries of listeners and route tables the build that just succeeded
// did not have, so that the memo holds that build and no more (the placed entries hold
// only the build's own). Every resource of a successful build has its entry, so when a
// map has as many entries as the IR has resources of its kind there is nothing to drop
// and nothing to look up.
func (m *gatewayMemo) prune(b *builder) {
	if len(m.listeners) != len(b.gw.Listeners) {
		names := make(map[string]bool, len(b.gw.Listeners))
		for _, l := range b.gw.Listeners {
			names[l.Name] = true
		}
		pruneMissing(m.listeners, func(n string) bool { return names[n] })
	}
	if tables := b.routeTables(); len(m.routes) != len(tables) {
		names := make(map[string]bool, len(tables))
		for _, t := range tables {
			names[t.Name] = true
		}
		pruneMissing(m.routes, func(n string) bool { return names[n] })
	}
}

// pruneMissing deletes the entries of memo whose name is not present.
func pruneMissing[E any](memo map[string]E, present func(name string) bool) {
	for name := range memo {
		if !present(name) {
			delete(memo, name)
		}
	}
}
