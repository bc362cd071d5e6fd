package translate

import (
	"unsafe"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Which HTTPRoutes name a Gateway is a walk over every route's parentRefs: at 10,000
// routes some 4 ms of each translation of a change (a quarter of a Backend delta's,
// profile of BenchmarkManagerOneBackendChanged, 2026-12-02). The answer is a function
// of the list of routes (its order is the translation's, sorted from it) and of the
// Gateway's namespace and name, and the manager hands the very same list again while no
// HTTPRoute event came (controllers/gather_reuse.go). So the answer is kept per Gateway
// with the list it came from and given again while a translation reads that list.
// Inputs are never modified once translated (see Translate), and the entry holds the
// list, so no other list can start at its address while the entry is kept. Routes
// without an identity (objects built by a test, files) make the walk answer false, and
// such an answer is not kept.

// namingEntry is routesNaming's answer for one Gateway and the list it came from.
type namingEntry struct {
	used   uint64
	list   []gwapiv1.HTTPRoute
	seen   []routeSeen
	routes []*gwapiv1.HTTPRoute
}

func (e *namingEntry) lastUse() *uint64 { return &e.used }

// routesNaming lists the identities of the routes with a parentRef to gw, and the
// routes, in translation order; false when one has no identity. The lists returned
// may be shared with other translations: read-only.
func (t *translator) routesNaming(gw *gwapiv1.Gateway) ([]routeSeen, []*gwapiv1.HTTPRoute, bool) {
	key := gw.Namespace + "/" + gw.Name
	if e, ok := take(t.cache, t.cache.namings, key, t.epoch); ok && sameList(e.list, t.routeList) {
		return e.seen[:len(e.seen):len(e.seen)], e.routes[:len(e.routes):len(e.routes)], true
	}
	seen, routes, ok := t.walkRoutesNaming(gw)
	if ok {
		put(t.cache, t.cache.namings, key, &namingEntry{used: t.epoch, list: t.routeList, seen: seen, routes: routes})
	}
	return seen, routes, ok
}

// walkRoutesNaming is routesNaming, walking every route.
func (t *translator) walkRoutesNaming(gw *gwapiv1.Gateway) ([]routeSeen, []*gwapiv1.HTTPRoute, bool) {
	var seen []routeSeen
	var routes []*gwapiv1.HTTPRoute
	for _, r := range t.routes {
		if !namesGateway(r, gw) {
			continue
		}
		if r.UID == "" || r.Generation == 0 {
			return nil, nil, false
		}
		seen, routes = append(seen, routeSeen{uid: r.UID, generation: r.Generation}), append(routes, r)
	}
	return seen, routes, true
}

// sameList tells whether a and b are one list: the same array, as long.
func sameList[T any](a, b []T) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}
