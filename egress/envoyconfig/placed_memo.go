package envoyconfig

// A Gateway's memo of clusters, endpoints and secrets is kept in the places of the IR
// list each was last built from (name_places.go), not in maps by name. A build looked
// up each of 10,000 clusters twice and 20,000 secrets by name: hashing those names was
// about a fifth of a one-Backend change's build (BenchmarkOneBackendChanged, 2026-12-03),
// although the translator's delta hands over lists with the same names in the same
// places. When a list has its memo's places the entry of the resource at place i is
// entry i; otherwise the memo is first placed anew, each entry moved to its name's new
// place (the resources no longer in the list drop out, so nothing is left to prune).

// placedMemo is one kind's entries: entries[i] is the last build of the resource named
// places.names[i] (in is nil when there is none).
type placedMemo[In, Out any] struct {
	places  *namePlaces
	entries []memoEntry[In, Out]
}

// placedAs is m with its entries in places: m itself when those are its places, a new
// memo otherwise (m stays as it was). nil (keeping nothing) stays nil.
func (m *placedMemo[In, Out]) placedAs(places *namePlaces) *placedMemo[In, Out] {
	if m == nil || m.places == places {
		return m
	}
	out := &placedMemo[In, Out]{places: places, entries: make([]memoEntry[In, Out], len(places.names))}
	if m.places == nil {
		return out
	}
	for i, name := range places.names {
		if j, ok := m.places.at[name]; ok {
			out.entries[i] = m.entries[j]
		}
	}
	return out
}

// entry is the last build of the resource at place i.
func (m *placedMemo[In, Out]) entry(i int) (memoEntry[In, Out], bool) {
	if m == nil {
		return memoEntry[In, Out]{}, false
	}
	e := m.entries[i]
	return e, e.in != nil
}

// keeper stores a fresh build at place i; nil when m keeps nothing.
func (m *placedMemo[In, Out]) keeper(i int) func(memoEntry[In, Out]) {
	if m == nil {
		return nil
	}
	return func(e memoEntry[In, Out]) { m.entries[i] = e }
}

// placesOf is m's places, nil for none.
func (m *placedMemo[In, Out]) placesOf() *namePlaces {
	if m == nil {
		return nil
	}
	return m.places
}
