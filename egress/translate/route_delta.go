package translate

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// A translation whose input differs from the last one's only in HTTPRoutes (created,
// deleted, or given a new generation), and maybe in the Backends they name (a user
// applies a Backend and its route together), is a route delta, the same way a Backend
// delta is (delta.go): the Backends the changed routes name, before or after the
// change, are taken as changed (touched) with those whose spec changed, so that every
// ref naming them is resolved again, on every Gateway, and their statuses and the
// Gateways using them come out as a full translation's. On each Gateway whose routes changed, the kept route
// side is filed again route by route (reattachRoutes): a route that did not change from
// its span (what attaching it filed last time), the others by attaching them. The
// Gateway's clusters are the last translation's, with those of the touched Backends
// resolved again in place, added, or dropped when no ref resolves to them any more.
//
// On a forward proxy the tables, built again, open their tunnels again, which puts the
// tunnels' clusters back among those the Gateway resolved.
//
// A Backend deleted that a Gateway used makes a route delta with the same routes: on
// the Gateways using it the kept route side does not replay (a ref to it resolves to
// nothing now), the routes whose refs named it are attached again (refileRoute finds
// they do not resolve as they did), and its clusters are dropped by their origin.
//
// A route delta gives up where a Backend delta does (a touched Backend is not a unit, or
// a BackendTLSPolicy, TLSRoute or TCPRoute names it), where a changed route refers to
// another kind than Backend (a Service, an XBackend), and where a changed route touches
// a Gateway whose route side is not kept with the same other inputs.
// TestRouteEditsTranslateAsCold compares route deltas with cold translations.

// routeDelta is what changed among the HTTPRoutes: their identities now, in order.
type routeDelta struct {
	ids []deltaID
}

// routeChanges lists the route identities that are new (created, or a new generation)
// and gone (deleted, or an old generation), as sets. The two lists mostly differ in one
// stretch (a route created, edited or deleted among 10,000 in the same order), so only
// what lies between their common head and common tail is put in sets: a list holds an
// identity once, so one in the head or tail of both is in neither's middle. The two
// sets of every identity were 1.3 MB of each route edit at 10,000.
func routeChanges(now, was []deltaID) (added, gone map[routeSeen]bool) {
	now, was = differingMiddles(now, was)
	set := func(ids []deltaID) map[routeSeen]bool {
		out := make(map[routeSeen]bool, len(ids))
		for _, id := range ids {
			out[routeSeen{uid: id.uid, generation: id.generation}] = true
		}
		return out
	}
	nowSet, wasSet := set(now), set(was)
	added, gone = map[routeSeen]bool{}, map[routeSeen]bool{}
	for id := range nowSet {
		if !wasSet[id] {
			added[id] = true
		}
	}
	for id := range wasSet {
		if !nowSet[id] {
			gone[id] = true
		}
	}
	return added, gone
}

// differingMiddles is a and b without the identities they begin and end with in common.
func differingMiddles(a, b []deltaID) ([]deltaID, []deltaID) {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	a, b = a[head:], b[head:]
	tail := 0
	for tail < len(a) && tail < len(b) && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	return a[:len(a)-tail], b[:len(b)-tail]
}

// touchedBackends are the Backends the changed routes may name: the refs the gone
// routes' spans resolved, on every Gateway, and every backendRef and mirror of the added
// routes. Names only (of any kind: more is safe, fewer is not); false when a gone route
// is kept without spans.
func (t *translator) touchedBackends(added, gone map[routeSeen]bool) (map[types.NamespacedName]bool, bool) {
	touched := map[types.NamespacedName]bool{}
	ok := t.cache.eachRouteSide(func(e *routeSide) bool {
		if len(e.spans) != len(e.routes) {
			return false
		}
		for i, seen := range e.routes {
			if !gone[seen] {
				continue
			}
			for _, ref := range e.refs[e.spans[i].refs[0]:e.spans[i].refs[1]] {
				if !namesBackend(ref.ref) {
					return false
				}
				touched[refTarget(ref.namespace, ref.ref)] = true
			}
		}
		return true
	})
	for _, r := range t.routes {
		if !added[routeSeen{uid: r.UID, generation: r.Generation}] {
			continue
		}
		for _, ref := range routeRefs(r) {
			if !namesBackend(ref) {
				return nil, false
			}
			touched[refTarget(r.Namespace, ref)] = true
		}
	}
	return touched, ok
}

// namesBackend tells whether a backendRef is to a Backend: a route delta resolves no
// other kind (a Service's cluster is not a unit's, and it does not know when one goes).
func namesBackend(ref gwapiv1.BackendObjectReference) bool {
	return ref.Group != nil && string(*ref.Group) == egressv1alpha1.GroupVersion.Group &&
		ref.Kind != nil && string(*ref.Kind) == egressv1alpha1.BackendKind
}

// refTarget is the object a backendRef written in namespace ns names.
func refTarget(ns string, ref gwapiv1.BackendObjectReference) types.NamespacedName {
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	return types.NamespacedName{Namespace: ns, Name: string(ref.Name)}
}

// routeRefs lists every reference to a backend in a route: its rules' backendRefs and
// the mirrors of its rules' and backendRefs' filters.
func routeRefs(r *gwapiv1.HTTPRoute) []gwapiv1.BackendObjectReference {
	var out []gwapiv1.BackendObjectReference
	mirrors := func(filters []gwapiv1.HTTPRouteFilter) {
		for _, f := range filters {
			if f.RequestMirror != nil {
				out = append(out, f.RequestMirror.BackendRef)
			}
		}
	}
	for _, rule := range r.Spec.Rules {
		mirrors(rule.Filters)
		for _, ref := range rule.BackendRefs {
			out = append(out, ref.BackendObjectReference)
			mirrors(ref.Filters)
		}
	}
	return out
}

// reattachRoutes computes the Gateway's route side in a route delta from the kept one:
// the routes that did not change and whose refs resolve as they did are filed from their
// spans, the others attached. False when it cannot vouch for the result.
func (t *translator) reattachRoutes(g *gatewayContext, keep bool, inputs string, routes []routeSeen) bool {
	e := t.cache.routeSide(g.out.Name, t.epoch)
	if !keep || e == nil || e.inputs != inputs || len(e.spans) != len(e.routes) {
		return false
	}
	kept := routePlaces{kept: e.routes}
	g.prior = e
	g.record = &routeSide{inputs: inputs, routes: routes, tables: map[uint32]httpTables{},
		spans: make([]routeSpan, 0, len(e.spans)), refs: make([]refSeen, 0, len(e.refs)),
		exists: make([]existenceSeen, 0, len(e.exists)), statuses: make([]parentSeen, 0, len(e.statuses))}
	choices := listenerChoices{}
	for _, r := range g.naming {
		i, ok := kept.find(routeSeen{uid: r.UID, generation: r.Generation})
		if !ok {
			t.attachOneRoute(g, choices, r)
			continue
		}
		mark := g.record.mark()
		if !t.refileRoute(g, e, &e.spans[i]) {
			// A ref of it resolves otherwise (its Backend was deleted, say): attach it
			// afresh, as a full translation would. What the refile began is dropped;
			// the refs it resolved again are resolved again, to the same clusters.
			g.record.rollback(mark)
			t.attachOneRoute(g, choices, r)
		}
	}
	for _, l := range g.listeners {
		g.record.attached = append(g.record.attached, l.attachedRoutes)
	}
	return true
}

// refileRoute files a route that did not change as attaching it did last time, into the
// route side being recorded; the refs naming a touched Backend are resolved again and
// must resolve as they did.
func (t *translator) refileRoute(g *gatewayContext, e *routeSide, span *routeSpan) bool {
	g.record.startRoute()
	for _, seen := range e.refs[span.refs[0]:span.refs[1]] {
		if !t.resolvesAsItDid(g, &seen) {
			return false
		}
		g.record.refs = append(g.record.refs, seen)
	}
	for _, seen := range e.exists[span.exists[0]:span.exists[1]] {
		if !t.existsAsItDid(seen) {
			return false
		}
		g.record.exists = append(g.record.exists, seen)
	}
	for _, s := range e.statuses[span.statuses[0]:span.statuses[1]] {
		t.addParentStatus(g, s.key, s.status)
	}
	for _, j := range span.joins {
		g.join(g.listeners[j.listener], j.domains, j.entries)
	}
	g.record.endRoute()
	return true
}

// routeDeltaClusters returns the Gateway's clusters and secrets in a route delta: the
// base's, with those this translation resolved put in place or added, and the clusters
// of touched Backends (by their origin) that nothing resolved to this time dropped: a
// route that went, a port renamed, a Backend that is no longer usable or no longer
// there. The secrets only dropped clusters named go with them (droppedSecrets).
func (t *translator) routeDeltaClusters(g *gatewayContext, prev ir.Gateway) ([]*ir.Cluster, []ir.Secret) {
	drop := map[string]bool{}
	var named []string // the secrets the dropped clusters name
	for _, c := range prev.Clusters {
		o := c.Origin
		if o.Kind != ir.OriginBackend || !t.delta.changed[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}] || g.clusters[c.Name] != nil {
			continue
		}
		drop[c.Name] = true
		named = append(named, clusterSecrets(c)...)
	}
	clusters := mergeByName(prev.Clusters, g.clusters, drop, func(c *ir.Cluster) string { return c.Name }, func(c *ir.Cluster) *ir.Cluster { return c })
	secrets := mergeByName(prev.Secrets, g.secrets, droppedSecrets(named, clusters), func(s ir.Secret) string { return s.Name }, func(s ir.Secret) ir.Secret { return s })
	return clusters, secrets
}

// droppedSecrets are the named secrets that no kept cluster names: another Backend's
// cluster may share one. (The listeners' certificates, and the secrets of the clusters
// this translation resolved, are gathered again into the Gateway's secrets, which
// mergeByName puts back.)
func droppedSecrets(named []string, clusters []*ir.Cluster) map[string]bool {
	if len(named) == 0 {
		return nil
	}
	drop := make(map[string]bool, len(named))
	for _, s := range named {
		drop[s] = true
	}
	for _, c := range clusters {
		for _, s := range clusterSecrets(c) {
			delete(drop, s)
		}
	}
	return drop
}

// clusterSecrets are the secrets a cluster names.
func clusterSecrets(c *ir.Cluster) []string {
	var names []string
	if c.TLS != nil {
		for _, s := range []string{c.TLS.CASecret, c.TLS.ClientCertificateSecret} {
			if s != "" {
				names = append(names, s)
			}
		}
	}
	if c.Credential != nil {
		names = append(names, c.Credential.Secret)
	}
	return names
}

// mergeByName copies sorted without the names in drop, with the elements named in m in
// place of those of the same name or, for names it lacks, inserted in order.
func mergeByName[T, V any](sorted []T, m map[string]V, drop map[string]bool, name func(T) string, value func(V) T) []T {
	if len(m) == 0 && len(drop) == 0 {
		return sorted
	}
	out := make([]T, 0, len(sorted)+len(m))
	for _, x := range sorted {
		if !drop[name(x)] {
			out = append(out, x)
		}
	}
	for k, v := range m {
		i, found := findByName(out, k, name)
		if found {
			out[i] = value(v)
			continue
		}
		out = slices.Insert(out, i, value(v))
	}
	return out
}

// findByName finds name in a slice sorted by name: its index, or where it would go.
func findByName[T any](sorted []T, name string, nameOf func(T) string) (int, bool) {
	i := sort.Search(len(sorted), func(i int) bool { return nameOf(sorted[i]) >= name })
	return i, i < len(sorted) && nameOf(sorted[i]) == name
}
