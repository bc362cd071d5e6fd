package translate

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// The route side of a Gateway is a unit (units.go) one level above the Backends: the
// HTTPRoutes attached to it, their parent statuses, the listeners' attachedRoutes and
// the route tables of its HTTP listeners (the shared one and every tenant's). Its inputs
// are declared, not discovered:
//
//   - what the Gateway's listeners are after validation, its isolation, the
//     controllerName, whether a shared table is served, the ReferenceGrants and, when a
//     listener selects namespaces by label, the namespaces' labels (routeSideInputs);
//   - on a forward proxy, every tunnel a table may carry, as the tables read it:
//     authority, cluster name, whether it has an address, the Backend's namespace and the
//     namespaces it admits;
//   - the HTTPRoutes that name the Gateway, in order, by UID and generation (a route's
//     translation reads its spec, name, namespace and creation time, never its labels,
//     annotations or status);
//   - for every backendRef resolved, the cluster it resolved to or why it could not be;
//     for every backendRef of a route that attaches nowhere, whether its target exists
//     (its ResolvedRefs says so, and nothing else is read of it).
//
// The last is an early cutoff: a route reads a Backend only through the cluster name
// its ref resolves to or the reason it does not, so a Backend whose clusters changed
// (new TLS settings, a rotated certificate, new addresses) leaves the route side as it
// was; only the Gateway's clusters, which are gathered again by resolving every ref,
// change. A change among ten thousand Backends then attaches and tables no route.
//
// Resolving the refs again, and opening again the tunnels the tables carry, is also what
// puts the clusters and secrets into the Gateway and tells each Backend that it is
// referenced or tunneled, so the Backends' statuses and the publisher's
// Backend-to-Gateway index come out as if the routes had been attached and the tables
// built. A tenant's refused route is kept like any other, so that one broken route on a
// shared Gateway does not make every other tenant's change attach all routes again.

// routeSide is a Gateway's kept route side. It is never modified once stored; its
// tables and statuses are shared by every Result that reuses it (a Result is read-only).
type routeSide struct {
	used     uint64
	inputs   string
	routes   []routeSeen
	spans    []routeSpan // one per route, in the same order
	refs     []refSeen
	exists   []existenceSeen
	tunnels  []string // the clusters of the tunnels the tables opened, in order
	statuses []parentSeen
	byRoute  map[string][]gwapiv1.RouteParentStatus // the statuses by route key (route_statuses.go)
	attached []int32                                // per listener, in the Gateway's order
	tables   map[uint32]httpTables
}

// routeSpan is what attaching one route filed: where its refs, existence checks and
// statuses are in the route side's lists (from, to), and the tables it joined. A route
// delta (route_delta.go) files a route that did not change from its span.
type routeSpan struct {
	refs, exists, statuses [2]int
	joins                  []routeJoin
}

// routeJoin is a route's entries filed under domains of a listener (by its index in
// the Gateway's listeners), as buildRules made them.
type routeJoin struct {
	listener int
	domains  []string
	entries  []routeEntry
}

// routeSeen is a route's identity: its spec is pinned by its generation.
type routeSeen struct {
	uid        types.UID
	generation int64
}

// refSeen is one backendRef of a route (or of a mirror filter) and what it resolved to.
type refSeen struct {
	namespace string
	ref       gwapiv1.BackendObjectReference
	cluster   string
	problem   refError // zero when the ref resolved
}

// existenceSeen is whether the target of a refused route's backendRef existed.
type existenceSeen struct {
	target types.NamespacedName
	kind   targetKind
	exists bool
}

// parentSeen is one RouteParentStatus, in the order translation filed it.
type parentSeen struct {
	key    string
	status gwapiv1.RouteParentStatus
}

// httpTables are the route tables of one Envoy port, with the entries their virtual
// hosts were made from by domain (sharedHosts; tenantHosts, one per tenant), which the
// next route delta compares with (host_reuse.go).
type httpTables struct {
	virtualHosts []ir.VirtualHost
	tenants      []ir.Tenant
	sharedHosts  map[string][]*routeEntry
	tenantHosts  []map[string][]*routeEntry
}

// The note methods collect what a route side reads and makes while it is computed; a
// nil *routeSide notes nothing.

func (r *routeSide) noteRef(ns string, ref gwapiv1.BackendObjectReference, cluster string, e *refError) {
	if r == nil {
		return
	}
	seen := refSeen{namespace: ns, ref: ref, cluster: cluster}
	if e != nil {
		seen.problem = *e
	}
	r.refs = append(r.refs, seen)
}

func (r *routeSide) noteStatus(key string, st gwapiv1.RouteParentStatus) {
	if r != nil {
		r.statuses = append(r.statuses, parentSeen{key: key, status: st})
	}
}

// startRoute opens the span of the next route; endRoute closes it.
func (r *routeSide) startRoute() {
	if r != nil {
		from := func(n int) [2]int { return [2]int{n, n} }
		r.spans = append(r.spans, routeSpan{refs: from(len(r.refs)), exists: from(len(r.exists)), statuses: from(len(r.statuses))})
	}
}

// sideMark is where the route side's lists end, to drop what a route began after it.
type sideMark struct{ spans, refs, exists, statuses int }

func (r *routeSide) mark() sideMark {
	return sideMark{len(r.spans), len(r.refs), len(r.exists), len(r.statuses)}
}

func (r *routeSide) rollback(m sideMark) {
	r.spans, r.refs, r.exists, r.statuses = r.spans[:m.spans], r.refs[:m.refs], r.exists[:m.exists], r.statuses[:m.statuses]
}

func (r *routeSide) endRoute() {
	if r != nil {
		s := &r.spans[len(r.spans)-1]
		s.refs[1], s.exists[1], s.statuses[1] = len(r.refs), len(r.exists), len(r.statuses)
	}
}

func (r *routeSide) noteJoin(listener int, domains []string, entries []routeEntry) {
	if r != nil {
		s := &r.spans[len(r.spans)-1]
		s.joins = append(s.joins, routeJoin{listener: listener, domains: domains, entries: entries})
	}
}

func (r *routeSide) noteTunnel(cluster string) {
	if r != nil {
		r.tunnels = append(r.tunnels, cluster)
	}
}

func (r *routeSide) noteExists(target types.NamespacedName, kind targetKind, exists bool) {
	if r != nil {
		r.exists = append(r.exists, existenceSeen{target: target, kind: kind, exists: exists})
	}
}

// attachHTTPRoutes attaches the Gateway's HTTPRoutes, or takes its route side from the
// Cache when every input is as it was and every ref resolves as it did.
func (t *translator) attachHTTPRoutes(g *gatewayContext) {
	inputs, routes, keep := t.routeSideInputs(g)
	if e := t.keptRouteSide(g, keep, inputs, routes); e != nil {
		if t.replayRouteSide(g, e) {
			return
		}
		// A ref resolves otherwise: the clusters and secrets the replay gathered are
		// gathered again below (what it told the Backends, attaching tells them too).
		g.clusters, g.secrets = make(map[string]*ir.Cluster, g.refs), make(map[string]ir.Secret, 2*g.refs)
	}
	switch {
	case t.delta != nil && t.delta.routes != nil:
		if !t.reattachRoutes(g, keep, inputs, routes) {
			t.delta.failed = true
		}
	case t.delta != nil:
		t.delta.failed = true // a Backend delta attaches no route: the route side must be kept
	case !keep:
		t.attachRoutes(g)
	default:
		// Sized up front: appending ten thousand refs and statuses one by one left as
		// much garbage again as the lists hold.
		g.record = &routeSide{inputs: inputs, routes: routes, tables: map[uint32]httpTables{},
			refs: make([]refSeen, 0, g.refs), statuses: make([]parentSeen, 0, len(routes))}
		t.attachRoutes(g)
		for _, l := range g.listeners {
			g.record.attached = append(g.record.attached, l.attachedRoutes)
		}
	}
}

// keptRouteSide is the Gateway's route side in the Cache when its inputs are as they
// were (and have identities), else nil.
func (t *translator) keptRouteSide(g *gatewayContext, keep bool, inputs string, routes []routeSeen) *routeSide {
	if !keep {
		return nil
	}
	if e := t.cache.routeSide(g.out.Name, t.epoch); e != nil && e.inputs == inputs && slices.Equal(e.routes, routes) {
		return e
	}
	return nil
}

// replayRouteSide resolves the kept refs again, in their order, opens the kept tunnels
// again and files the kept statuses and counts; buildListeners takes the kept tables. It
// returns false, having filed no status, as soon as a ref resolves to another cluster or
// for another reason, or a refused route's target has come or gone.
func (t *translator) replayRouteSide(g *gatewayContext, e *routeSide) bool {
	for _, seen := range e.exists {
		if !t.existsAsItDid(seen) {
			return false
		}
	}
	for i := range e.refs {
		if !t.resolvesAsItDid(g, &e.refs[i]) {
			return false
		}
	}
	if !t.reopenTunnels(g, e.tunnels) {
		return false
	}
	t.fileKeptStatuses(g, e)
	for i, n := range e.attached {
		g.listeners[i].attachedRoutes = n
	}
	g.reused = e
	return true
}

// existsAsItDid tells whether a refused route's target exists, or not, as it did; a
// delta looks only at the changed Backends' names (nothing else was created or deleted).
func (t *translator) existsAsItDid(seen existenceSeen) bool {
	if t.delta != nil && !t.delta.changed[seen.target] {
		return true
	}
	return (t.checkRefExists(seen.target, seen.kind) == nil) == seen.exists
}

// resolvesAsItDid resolves a kept ref again, which puts its cluster into the Gateway,
// and tells whether it resolves to the same cluster or for the same reason; a delta
// resolves only the refs naming a changed Backend (the others' clusters are the base's).
func (t *translator) resolvesAsItDid(g *gatewayContext, seen *refSeen) bool {
	if t.delta != nil && !t.delta.names(seen) {
		return true
	}
	wc, rerr := t.resolveBackendTarget(g, seen.namespace, seen.ref)
	return wc.Cluster == seen.cluster && sameProblem(rerr, seen.problem)
}

// reopenTunnels opens again the tunnels of the named clusters, as the kept tables did.
// The tunnels are among the inputs, so each is there; false if one is not.
func (t *translator) reopenTunnels(g *gatewayContext, clusters []string) bool {
	if len(clusters) == 0 {
		return true
	}
	byCluster := map[string]tunnelTarget{}
	for _, tt := range t.tunnelTargets() {
		byCluster[tt.cluster.Name] = tt
	}
	for _, name := range clusters {
		tt, ok := byCluster[name]
		if !ok {
			return false
		}
		t.useTunnel(g, tt)
	}
	return true
}

func sameProblem(e *refError, seen refError) bool {
	if e == nil {
		return seen.reason == ""
	}
	return *e == seen
}

// httpTables returns the route tables of an HTTP listener's port: the shared one where
// it is served and, on an isolating Gateway, every tenant's. A reused route side gives
// its own.
func (t *translator) httpTables(g *gatewayContext, l *ir.Listener, port uint32, tunnels []tunnelTarget) httpTables {
	if g.reused != nil {
		return g.reused.tables[port]
	}
	var out httpTables
	prior := g.priorTables(port)
	if t.servesSharedTable(g) {
		shared := t.sharedTable(g, l, port, tunnels, hostTable{entries: prior.sharedHosts, vhosts: prior.virtualHosts})
		out.virtualHosts, out.sharedHosts = shared.vhosts, shared.entries
	}
	if g.isolated {
		out.tenants, out.tenantHosts = t.tenantTables(g, port, g.hosts[port], tunnels, &prior)
	}
	if g.record != nil {
		g.record.tables[port] = out
	}
	return out
}

// keepRouteSide stores the route side just computed.
func (t *translator) keepRouteSide(g *gatewayContext) {
	if g.record == nil || t.delta != nil && t.delta.failed {
		return // a delta that gave up may have recorded part of a route side
	}
	g.record.used = t.epoch
	g.record.byRoute = routeStatusesOf(g.record.statuses)
	t.cache.storeRouteSide(g.out.Name, g.record)
}

// routeSideInputs describes everything the route side reads besides the routes and what
// their refs resolve to, and lists the routes naming the Gateway. keep is false when a
// route or grant has no identity.
func (t *translator) routeSideInputs(g *gatewayContext) (inputs string, routes []routeSeen, keep bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "controller %s isolated %t shared %t\n", t.opts.ControllerName, g.isolated, t.servesSharedTable(g))
	selectors, proxy := false, false
	for _, l := range g.listeners {
		spec, err := json.Marshal(l.spec)
		if err != nil {
			return "", nil, false
		}
		kinds, err := json.Marshal(l.supportedKinds)
		if err != nil {
			return "", nil, false
		}
		fmt.Fprintf(&b, "listener %s port %d valid %t served %t namespace %s kinds %s\n", spec, l.envoyPort, l.valid(), l.served(), l.gatewayNamespace, kinds)
		selectors = selectors || selectsNamespaces(l.spec)
		proxy = proxy || l.forwardProxy
	}
	if proxy {
		t.writeTunnels(&b)
	}
	for _, gr := range t.grants {
		if gr.UID == "" || gr.ResourceVersion == "" {
			return "", nil, false
		}
		fmt.Fprintf(&b, "grant %s %s\n", gr.UID, gr.ResourceVersion)
	}
	if selectors {
		t.writeNamespaceLabels(&b)
	}
	routes, g.naming, keep = t.routesNaming(g.gw)
	return b.String(), routes, keep
}

// writeTunnels writes what a forward proxy's tables read of each tunnel.
func (t *translator) writeTunnels(b *strings.Builder) {
	for _, tt := range t.tunnelTargets() {
		fmt.Fprintf(b, "tunnel %s:%d cluster %s addressless %t namespace %s callers %s\n",
			tt.domain, tt.port, tt.cluster.Name, len(tt.cluster.Endpoints) == 0, tt.tb.b.Namespace, strings.Join(tt.callers, ","))
	}
}

func selectsNamespaces(l *gwapiv1.Listener) bool {
	ar := l.AllowedRoutes
	return ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil && *ar.Namespaces.From == gwapiv1.NamespacesFromSelector
}

// writeNamespaceLabels writes every namespace's labels, in order.
func (t *translator) writeNamespaceLabels(b *strings.Builder) {
	names := make([]string, 0, len(t.namespaceLabel))
	for ns := range t.namespaceLabel {
		names = append(names, ns)
	}
	sort.Strings(names)
	for _, ns := range names {
		labels, err := json.Marshal(t.namespaceLabel[ns]) // map keys in order
		if err != nil {
			labels = []byte(fmt.Sprint(err))
		}
		fmt.Fprintf(b, "namespace %s %s\n", ns, labels)
	}
}
