package translate

// A route delta looks up, for each route naming the Gateway, its place among the routes
// of the kept route side. Indexing those 10,000 places in a map on every route edit was
// 1.6 MB of each (profile of BenchmarkManagerOneRouteChanged, 2026-12-03), yet the routes
// come in translation order, the kept side's order, with at most a few created, edited
// or deleted. So the places are followed with a cursor: a route is first looked for at
// the place after the last one found, then one further (the kept route there was
// deleted, or edited into the route before), and only a route found at neither builds
// the map. A route whose UID is at the cursor with another generation was edited: the
// UID names one route, so it is nowhere else among the kept ones, and no map is needed
// to tell (an edit, the most common change, builds none).

// routePlaces finds routes among the routes of a kept route side.
type routePlaces struct {
	kept []routeSeen
	next int
	byID map[routeSeen]int // built on the first route out of order
}

// find returns the place of seen among the kept routes; false when it is not there.
func (p *routePlaces) find(seen routeSeen) (int, bool) {
	if p.next < len(p.kept) && p.kept[p.next].uid == seen.uid && p.kept[p.next].generation != seen.generation {
		p.next++
		return 0, false
	}
	for _, i := range [2]int{p.next, p.next + 1} {
		if i < len(p.kept) && p.kept[i] == seen {
			p.next = i + 1
			return i, true
		}
	}
	if p.byID == nil {
		p.byID = make(map[routeSeen]int, len(p.kept))
		for i, k := range p.kept {
			p.byID[k] = i
		}
	}
	i, ok := p.byID[seen]
	if ok {
		p.next = i + 1
	}
	return i, ok
}
