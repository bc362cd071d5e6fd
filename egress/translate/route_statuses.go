package translate

import (
	"maps"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The HTTPRoutes' parent statuses of a Result. A translation that takes a Gateway's
// route side from the Cache (route_side.go) files the statuses that route side kept; at
// ten thousand routes, filing them one by one into a new map was a tenth of what a
// change among ten thousand Backends allocated (a 10,000-entry map and a slice per
// route) and half of the CPU time taking the route side took (0.23 of 0.43 s over 60
// changes in a profile of the manager, 2026-12-02). So a kept route side holds its
// statuses as a map of its own too, and the first Gateway to file statuses in a
// translation lends it to the Result: on a Gateway of its own, or the first of several,
// that is every route's status without a copy. The map and its slices are never
// modified: a Result is read-only, the manager copies before it refuses a route
// (controllers/build_isolation.go), and a later Gateway of the same translation copies
// the map before it files more (ownRouteStatuses). Its slices have no spare capacity, so
// appending to one copies it.

// routeStatusesOf is the statuses of a route side by route key, in the order filed.
// A route's statuses are filed together, so each key's slice is a run of one array
// (capped at its end); a key met again after another is copied out of it.
func routeStatusesOf(statuses []parentSeen) map[string][]gwapiv1.RouteParentStatus {
	all := make([]gwapiv1.RouteParentStatus, len(statuses))
	m := make(map[string][]gwapiv1.RouteParentStatus, len(statuses))
	for from := 0; from < len(statuses); {
		key, to := statuses[from].key, from+1
		for to < len(statuses) && statuses[to].key == key {
			to++
		}
		for i := from; i < to; i++ {
			all[i] = statuses[i].status
		}
		if run := all[from:to:to]; m[key] == nil {
			m[key] = run
		} else {
			m[key] = append(m[key], run...) // m[key] is capped: a copy
		}
		from = to
	}
	return m
}

// fileKeptStatuses files the statuses of a kept route side: its own map when nothing
// was filed before it, else one by one.
func (t *translator) fileKeptStatuses(g *gatewayContext, e *routeSide) {
	if len(t.result.Statuses.HTTPRoutes) == 0 && len(e.byRoute) > 0 {
		t.result.Statuses.HTTPRoutes, t.lentRouteStatuses = e.byRoute, true
		return
	}
	for _, s := range e.statuses {
		t.addParentStatus(g, s.key, s.status)
	}
}

// ownRouteStatuses is the Result's map of HTTPRoute statuses, ready to file into: a
// copy of a route side's map it was lent, or, for the first status, one with room for
// every route.
func (t *translator) ownRouteStatuses() map[string][]gwapiv1.RouteParentStatus {
	st := &t.result.Statuses
	switch {
	case t.lentRouteStatuses:
		own := make(map[string][]gwapiv1.RouteParentStatus, max(len(st.HTTPRoutes), t.routeRoom))
		maps.Copy(own, st.HTTPRoutes)
		st.HTTPRoutes, t.lentRouteStatuses = own, false
	case len(st.HTTPRoutes) == 0 && t.routeRoom > 0:
		st.HTTPRoutes = make(map[string][]gwapiv1.RouteParentStatus, t.routeRoom)
	}
	t.routeRoom = 0
	return st.HTTPRoutes
}
