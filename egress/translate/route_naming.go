package translate

import (
	"unsafe"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Which HTTPRoutes name a Gateway is a walk over every route's parentRefs: at 10,000
// routes some 4 ms of each translation of a change (a quarter of a Backend delta's,
// profile of BenchmarkManagerOneBackendChanged, 2026-12-02). The answer is a function
// of the routes in translation order, each pinned by its identity (UID and generation:
// parentRefs are spec), and of the Gateway's namespace and name. So it is kept per
// Gateway with the identity of every route it was computed from, and given again while
// the routes, place by place, have those identities: a comparison of two values per
// route instead of a walk through its parentRefs. When the very list of the last
// answer comes again with the same routes at the answer's places (the manager's
// gatherer hands it out again while no HTTPRoute event came), the kept lists are given
// as they are; a new list with the same identities gets the kept answer's places
// pointed at it. A list whose identities differ from the kept ones in one stretch (a
// route edited, created or deleted) has only that stretch walked; the routes before and
// after it keep their answers. Routes without an identity are walked every time.

// namingEntry is routesNaming's answer for one Gateway and what it came from.
type namingEntry struct {
	used uint64
	// list is the input list the routes point into; ids every route's identity, in
	// translation order; at the places of the routes naming the Gateway among them.
	list   []*gwapiv1.HTTPRoute
	ids    []routeSeen
	at     []int32
	seen   []routeSeen
	routes []*gwapiv1.HTTPRoute
}

func (e *namingEntry) lastUse() *uint64 { return &e.used }

// routesNaming lists the identities of the routes with a parentRef to gw, and the
// routes, in translation order; false when one has no identity. The lists returned
// may be shared with other translations: read-only.
func (t *translator) routesNaming(gw *gwapiv1.Gateway) ([]routeSeen, []*gwapiv1.HTTPRoute, bool) {
	key := gw.Namespace + "/" + gw.Name
	kept, ok := take(t.cache, t.cache.namings, key, t.epoch)
	if ok && holdsIdentities(kept.ids, t.routes) {
		e := kept
		if !sameList(e.list, t.routeList) || !e.pointsInto(t.routes) {
			e = e.pointedAt(t.routes, t.routeList, t.epoch)
			put(t.cache, t.cache.namings, key, e)
		}
		return e.seen[:len(e.seen):len(e.seen)], e.routes[:len(e.routes):len(e.routes)], true
	}
	var e *namingEntry
	var keep bool
	if ok {
		e, keep, ok = t.walkChangedNaming(gw, kept)
	} else {
		e, keep, ok = t.walkRoutesNaming(gw)
	}
	if !ok {
		return nil, nil, false
	}
	if keep {
		put(t.cache, t.cache.namings, key, e)
	}
	return e.seen[:len(e.seen):len(e.seen)], e.routes[:len(e.routes):len(e.routes)], true
}

// walkRoutesNaming walks every route. It is not ok when a route naming gw has no
// identity, and the answer is not to be kept when any other route has none: such a
// route may change unseen.
func (t *translator) walkRoutesNaming(gw *gwapiv1.Gateway) (e *namingEntry, keep, ok bool) {
	e = &namingEntry{used: t.epoch, list: t.routeList, ids: make([]routeSeen, len(t.routes))}
	keep, ok = t.walkNaming(gw, e, 0, len(t.routes))
	return e, keep, ok
}

// walkChangedNaming is walkRoutesNaming for routes that have kept's identities, place
// for place, before and after one stretch (shifted by as many places as routes came or
// went): the routes outside it name gw as they did, and only the stretch is walked.
// Its lists are sized from kept's: a route edit leaves about as many routes naming gw.
func (t *translator) walkChangedNaming(gw *gwapiv1.Gateway, kept *namingEntry) (e *namingEntry, keep, ok bool) {
	n, m := len(t.routes), len(kept.ids)
	head, tail := sameIdentitiesAround(kept.ids, t.routes)
	room := len(kept.at) + 1
	e = &namingEntry{used: t.epoch, list: t.routeList, ids: make([]routeSeen, n),
		at: make([]int32, 0, room), seen: make([]routeSeen, 0, room), routes: make([]*gwapiv1.HTTPRoute, 0, room)}
	copy(e.ids, kept.ids[:head])
	copy(e.ids[n-tail:], kept.ids[m-tail:])
	j := 0
	for ; j < len(kept.at) && int(kept.at[j]) < head; j++ {
		e.keepNaming(int(kept.at[j]), kept.seen[j], t.routes)
	}
	if keep, ok = t.walkNaming(gw, e, head, n-tail); !ok {
		return nil, false, false
	}
	for ; j < len(kept.at); j++ {
		if i := int(kept.at[j]); i >= m-tail {
			e.keepNaming(i+n-m, kept.seen[j], t.routes)
		}
	}
	return e, keep, true
}

// walkNaming walks the routes at places [from, to), noting their identities in e and
// adding those naming gw; keep and ok as walkRoutesNaming's.
func (t *translator) walkNaming(gw *gwapiv1.Gateway, e *namingEntry, from, to int) (keep, ok bool) {
	keep = true
	for i := from; i < to; i++ {
		r := t.routes[i]
		e.ids[i] = routeSeen{uid: r.UID, generation: r.Generation}
		identified := r.UID != "" && r.Generation != 0
		if !namesGateway(r, gw) {
			keep = keep && identified
			continue
		}
		if !identified {
			return false, false
		}
		e.keepNaming(i, e.ids[i], t.routes)
	}
	return keep, true
}

// keepNaming adds the route at place i, of identity seen, as one naming the Gateway.
func (e *namingEntry) keepNaming(i int, seen routeSeen, routes []*gwapiv1.HTTPRoute) {
	e.at = append(e.at, int32(i))
	e.seen, e.routes = append(e.seen, seen), append(e.routes, routes[i])
}

// sameIdentitiesAround counts the routes at the start (head) and, of the rest, at the
// end (tail) that have the identities ids has at the same places from either end.
func sameIdentitiesAround(ids []routeSeen, routes []*gwapiv1.HTTPRoute) (head, tail int) {
	same := func(id routeSeen, r *gwapiv1.HTTPRoute) bool { return id.uid == r.UID && id.generation == r.Generation }
	n, m := len(routes), len(ids)
	for head < n && head < m && same(ids[head], routes[head]) {
		head++
	}
	for tail < n-head && tail < m-head && same(ids[m-1-tail], routes[n-1-tail]) {
		tail++
	}
	return head, tail
}

// holdsIdentities tells whether routes have ids' identities, place by place.
func holdsIdentities(ids []routeSeen, routes []*gwapiv1.HTTPRoute) bool {
	if len(ids) != len(routes) {
		return false
	}
	for i, r := range routes {
		if ids[i].uid != r.UID || ids[i].generation != r.Generation {
			return false
		}
	}
	return true
}

// pointedAt is the entry's answer for routes of the same identities in another list.
func (e *namingEntry) pointedAt(routes []*gwapiv1.HTTPRoute, list []*gwapiv1.HTTPRoute, epoch uint64) *namingEntry {
	out := &namingEntry{used: epoch, list: list, ids: e.ids, at: e.at, seen: e.seen, routes: make([]*gwapiv1.HTTPRoute, len(e.at))}
	for j, i := range e.at {
		out.routes[j] = routes[i]
	}
	return out
}

// pointsInto tells whether the entry's routes are those at its places in routes. A list
// handed out again holds the same routes, but the routes are held by pointer, and one
// replaced in its place by an object of the same identity (a new resourceVersion of the
// same generation; tests and benchmarks replace in place) must be read as it is now, as
// it was when the list held routes by value.
func (e *namingEntry) pointsInto(routes []*gwapiv1.HTTPRoute) bool {
	for j, i := range e.at {
		if e.routes[j] != routes[i] {
			return false
		}
	}
	return true
}

// sameList tells whether a and b are one list: the same array, as long.
func sameList[T any](a, b []T) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}
