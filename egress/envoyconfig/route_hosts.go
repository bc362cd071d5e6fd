package envoyconfig

import (
	"fmt"
	"slices"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// A route table is one message, and Envoy takes it whole, but it is built virtual host
// by virtual host: when every route of a namespace is in one table (ten thousand hosts),
// a route created or edited changes one of them. The virtual hosts whose IR is the same
// as at the last build, and whose clusters have the same protocols, are that build's
// messages, and only the others are built and validated; the table is then assembled
// around them. BenchmarkOneRouteChanged measures it.

// hostEntry is one virtual host of a table's last build: its IR (a shallow copy), its
// message (the table's tail routes appended) and the clusters it names.
type hostEntry struct {
	vh      ir.VirtualHost
	out     *routev3.VirtualHost
	targets []clusterProtocol
}

// tableTail is what a table's virtual hosts are built with besides their own IR: the
// scheme redirects keep, the catch-all route (403 when isolated, else 404) and, on a
// forward proxy, the CONNECT denial. A host built for another tail is not reused.
type tableTail struct {
	scheme          string
	isolated, proxy bool
}

func tailOf(l *ir.Listener) tableTail {
	t := tableTail{scheme: "http", isolated: l.Isolated, proxy: l.ForwardProxy}
	if l.TLS != nil {
		t.scheme = "https"
	}
	return t
}

// tailRoutes are the routes every virtual host of a table ends with, in order: the
// catch-all answer, then on a forward proxy the CONNECT denial. Every host shares these
// messages (nothing modifies a built route; an encoder writes a shared message wherever
// it is referenced): a table of 10,000 hosts held 10,000 equal copies, 15 MB of the
// manager's live heap.
func tailRoutes(t tableTail) ([]*routev3.Route, error) {
	status, decision := noRouteStatus, DecisionNoRoute
	if t.isolated {
		status, decision = deniedStatus, DecisionNoRouteForCaller
	}
	deny, err := denyRoute(status, decision)
	if err != nil {
		return nil, err
	}
	if !t.proxy {
		return []*routev3.Route{deny}, nil
	}
	connect, err := connectDenyRoute(DecisionNoTunnel)
	if err != nil {
		return nil, err
	}
	return []*routev3.Route{deny, connect}, nil
}

// builtTable is a route table just assembled: its message, the virtual hosts built for
// it (the others were validated when they were built) and its memo entry.
type builtTable struct {
	out   *routev3.RouteConfiguration
	fresh []*routev3.VirtualHost
	entry routesEntry
}

// routeTable builds the route table of l, taking from reuse (the last build's hosts,
// nil for none) every virtual host that is as it was. A table without a "*" host gets
// one that answers every other Host with the catch-all route. targets is how many
// cluster targets the last build's table had: the memo's list is sized so (a route
// edit leaves about as many), where growing it was 1.6 MB of each edit at 10,000 hosts.
func (b *builder) routeTable(l *ir.Listener, reuse map[string]hostEntry, targets int) (builtTable, error) {
	if err := checkUniqueDomains(l); err != nil {
		return builtTable{}, err
	}
	tail := tailOf(l)
	tailMsgs, err := tailRoutes(tail)
	if err != nil {
		return builtTable{}, err
	}
	lr := listenerRoutes{builder: b, scheme: tail.scheme}
	t, remember := builtTable{}, b.memo.keeps()
	if remember { // the entry the next build compares with
		t.entry = routesEntry{hosts: make(map[string]hostEntry, len(l.VirtualHosts)), tail: tail, targets: make([]clusterProtocol, 0, targets)}
	}
	vhosts := make([]*routev3.VirtualHost, 0, len(l.VirtualHosts)+1)
	catchAll := false
	for i := range l.VirtualHosts {
		vh := &l.VirtualHosts[i]
		e, ok := reuse[vh.Name]
		if !ok || !equalVirtualHost(e.vh, *vh) || !b.targetsResolve(e.targets) {
			if e, err = lr.hostEntry(vh, tailMsgs); err != nil {
				return builtTable{}, fmt.Errorf("route configuration %q: %w", l.Name, err)
			}
			t.fresh = append(t.fresh, e.out)
		}
		e.vh = *vh // the IR of this build: the memo holds on to no older one
		catchAll = catchAll || slices.Contains(vh.Domains, catchAllHost)
		if remember {
			t.entry.hosts[vh.Name] = e
			t.entry.targets = append(t.entry.targets, e.targets...)
		}
		vhosts = append(vhosts, e.out)
	}
	if !catchAll {
		vh := &routev3.VirtualHost{Name: "no-route", Domains: []string{catchAllHost}, Routes: tailMsgs}
		vhosts, t.fresh = append(vhosts, vh), append(t.fresh, vh)
	}
	identity, err := identityConfig(l.Callers)
	if err != nil {
		return builtTable{}, fmt.Errorf("route configuration %q: %w", l.Name, err)
	}
	t.out = tableMessage(l.Name, vhosts, identity)
	if remember {
		t.entry.memoEntry = memoEntry[ir.Listener, *routev3.RouteConfiguration]{in: shallow(l), out: t.out}
	}
	return t, nil
}

// hostEntry builds one virtual host, the tail routes appended, and, when the build is
// remembered, its memo entry.
func (b listenerRoutes) hostEntry(vh *ir.VirtualHost, tail []*routev3.Route) (hostEntry, error) {
	msg, err := b.virtualHost(vh)
	if err != nil {
		return hostEntry{}, err
	}
	msg.Routes = appendReachable(msg.Routes, tail)
	if !b.memo.keeps() {
		return hostEntry{out: msg}, nil
	}
	return hostEntry{vh: *vh, out: msg, targets: b.hostTargets(vh)}, nil
}

// appendReachable appends to a virtual host's routes the tail routes a request can still
// reach: Envoy takes the first route that matches, so a tail route whose match is the
// very match of a route before it never answers anything. The common HTTPRoute rule
// without matches is a "/" prefix, the catch-all's own match; leaving the catch-all out
// of its host changes no answer and halves the routes Envoy builds for a table of such
// hosts (BenchmarkEnvoyAppliesOneRouteChange: ~100 ms of 240 at 10,000 hosts).
func appendReachable(routes, tail []*routev3.Route) []*routev3.Route {
	head := len(routes)
	for _, t := range tail {
		if !shadowed(routes[:head], t.GetMatch()) {
			routes = append(routes, t)
		}
	}
	return routes
}

// shadowed tells whether one of routes matches exactly what m matches.
func shadowed(routes []*routev3.Route, m *routev3.RouteMatch) bool {
	for _, r := range routes {
		if proto.Equal(r.GetMatch(), m) {
			return true
		}
	}
	return false
}

// validate checks the table as validateEach would, looking into the virtual hosts
// built for it alone: a route table's rules are about each field and each host on its
// own, so a host validated when it was built need not be again.
func (t builtTable) validate() error {
	shell := tableMessage(t.out.Name, t.fresh, t.out.TypedPerFilterConfig)
	if err := shell.ValidateAll(); err != nil {
		return fmt.Errorf("invalid route configuration %q: %w", t.out.Name, err)
	}
	return nil
}

// tableMessage is a route configuration of the given virtual hosts.
func tableMessage(name string, vhosts []*routev3.VirtualHost, identity map[string]*anypb.Any) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name:                 name,
		VirtualHosts:         vhosts,
		TypedPerFilterConfig: identity,
		// A route may name the reserved invalid-backend cluster on purpose (its share gets
		// 500). Inline route tables are validated against the cluster manager by default,
		// which would reject the static bootstrap; RDS tables are not. Say so explicitly.
		ValidateClusters: wrapperspb.Bool(false),
		// Envoy tells upstreams the client's address in this header when it deems the
		// client external; outside services must not learn the cluster's addresses.
		RequestHeadersToRemove: []string{"x-envoy-external-address"},
		// Gateway API hostnames carry no port; a Host with one ("api.example.com:1234")
		// must still match, and reaches the upstream as the client sent it.
		IgnorePortInHostMatching: true,
	}
}
