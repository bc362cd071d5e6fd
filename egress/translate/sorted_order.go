package translate

import (
	"maps"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/types"
)

// A Gateway's clusters and secrets are collected in maps and returned sorted by name.
// With ten thousand Backends, sorting their twenty thousand names again on every
// translation costs more than the rest of putting the Gateway together; yet after one
// Backend changes the names are those of the last translation. The Cache keeps the
// sorted names of each such map, and a translation whose map has exactly those names
// takes their order instead of sorting: the same names have one sorted order, so the
// output is what sorting gives. One lookup per name tells whether the names are the
// same (as many as the map has, each in it), and those lookups fetch the values anyway.

// orderEntry is the sorted keys of one map and the last epoch that used them.
type orderEntry struct {
	used uint64
	keys []string // sorted; never modified once stored
}

// sortedByKey returns the values of m, through value, in the order of their keys. id
// names the map among those a translation sorts, such as a Gateway's clusters.
func sortedByKey[V, T any](c *Cache, epoch uint64, id string, m map[string]V, value func(V) T) []T {
	if kept := c.order(id, epoch); kept != nil {
		if len(kept) == len(m) {
			if out, ok := valuesInOrder(kept, m, value); ok {
				return out
			}
		}
		less := func(a, b string) bool { return a < b }
		in := func(k string) bool { _, ok := m[k]; return ok }
		rest := func() []string { return keysNotIn(m, kept, less) }
		if keys := resorted(kept, len(m), in, rest, less); keys != nil {
			c.storeOrder(id, epoch, keys)
			out, _ := valuesInOrder(keys, m, value)
			return out
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c.storeOrder(id, epoch, keys)
	out, _ := valuesInOrder(keys, m, value)
	return out
}

// valuesInOrder returns the values of keys in m, in that order, or false when a key is
// not in m.
func valuesInOrder[V, T any](keys []string, m map[string]V, value func(V) T) ([]T, bool) {
	out := make([]T, 0, len(keys))
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			return nil, false
		}
		out = append(out, value(v))
	}
	return out, true
}

// order returns the sorted keys remembered under id, or nil.
func (c *Cache) order(id string, epoch uint64) []string {
	if e, ok := take(c, c.orders, id, epoch); ok {
		return e.keys
	}
	return nil
}

func (c *Cache) storeOrder(id string, epoch uint64, keys []string) {
	put(c, c.orders, id, &orderEntry{used: epoch, keys: keys})
}

// The HTTPRoutes are put in name order on every translation too: ten thousand of them,
// which the manager lists from its informer cache in no order at all, took a stable sort
// of 8 ms. Their sorted names are kept the same way, and a translation whose routes have
// exactly those names, each once, takes that order from one map of its routes by name;
// one with some names more or fewer merges the new ones into it (resorted).

// The list a translation gets is mostly the last one with an object replaced in its
// place (the manager's gatherer patches its lists so), so the entry also keeps the
// names in the list's own order and where each sorted object was in it: a list with the
// same names in the same places is put in order from those places, with one pass over
// its names and no map (4 ms a change at 10,000 routes).

// nameOrderEntry is the sorted names of one list of objects, the list's names in its
// own order and, for each sorted name, its place in the list, and the last epoch that
// used them. Its slices are never modified once stored.
type nameOrderEntry struct {
	used   uint64
	names  []types.NamespacedName
	input  []types.NamespacedName
	placed []int32
}

// sortedObjects returns the objects of in (the HTTPRoutes, held by pointer), sorted by
// namespace/name as sortObjects sorts them. id names the list among those a translation
// sorts.
func sortedObjects[P object](c *Cache, epoch uint64, id string, in []P) []P {
	kept := c.nameOrder(id, epoch)
	if kept != nil && sameNamesInPlace(kept.input, in, pointedObject[P]) {
		return inPlaces(in, kept.placed)
	}
	var placed []int32
	var names []types.NamespacedName
	if kept != nil {
		placed, names = placesFromKept(kept.names, in)
	}
	if placed == nil {
		if placed, names = sortedPlaces(in); names == nil {
			return inPlaces(in, placed) // a name twice: no order to keep (inNameOrder trusts a kept one)
		}
	}
	c.storeNameOrder(id, epoch, &nameOrderEntry{names: names, input: namesOf(in, pointedObject[P]), placed: placed})
	return inPlaces(in, placed)
}

// placesFromKept puts in in order from kept, the sorted names of an earlier list: the
// places of in's objects in name order and their names; nil when a name is in in twice
// or kept does not serve (keptNameOrder).
func placesFromKept[P object](kept []types.NamespacedName, in []P) ([]int32, []types.NamespacedName) {
	byName, ok := objectsByName(in)
	if !ok {
		return nil, nil
	}
	if len(kept) == len(byName) {
		if placed, ok := inNameOrder(kept, byName); ok {
			return placed, kept
		}
	}
	return keptNameOrder(kept, byName)
}

// sortedPlaces sorts in's places by their objects' names, stably, as sortObjects does;
// the names come back nil when a name is there twice.
func sortedPlaces[P object](in []P) ([]int32, []types.NamespacedName) {
	placed := make([]int32, len(in))
	for i := range placed {
		placed[i] = int32(i)
	}
	sort.SliceStable(placed, func(i, j int) bool { return lessName(nameOf(in[placed[i]]), nameOf(in[placed[j]])) })
	names := make([]types.NamespacedName, len(in))
	for i, at := range placed {
		names[i] = nameOf(in[at])
		if i > 0 && names[i] == names[i-1] {
			return placed, nil
		}
	}
	return placed, names
}

// inPlaces is the objects of in at placed, in placed's order.
func inPlaces[P object](in []P, placed []int32) []P {
	out := make([]P, len(placed))
	for i, at := range placed {
		out[i] = in[at]
	}
	return out
}

// The lists named below hold their objects by value (the Secrets, Services and
// ConfigMaps of name_index.go) or by pointer (the HTTPRoutes); obj gives the object of
// an element either way.

// valueObject is the object of an element of a list of objects.
func valueObject[T any, P interface {
	*T
	object
}](e *T) P {
	return P(e)
}

// pointedObject is the object of an element of a list of pointers.
func pointedObject[P object](e *P) P { return *e }

// namesOf is the names of in's objects, in in's order.
func namesOf[E any, P object](in []E, obj func(*E) P) []types.NamespacedName {
	out := make([]types.NamespacedName, len(in))
	for i := range in {
		out[i] = nameOf(obj(&in[i]))
	}
	return out
}

// sameNamesInPlace tells whether in holds exactly names, in their order.
func sameNamesInPlace[E any, P object](names []types.NamespacedName, in []E, obj func(*E) P) bool {
	if len(names) != len(in) {
		return false
	}
	for i := range in {
		if o := obj(&in[i]); names[i].Name != o.GetName() || names[i].Namespace != o.GetNamespace() {
			return false
		}
	}
	return true
}

// objectsByName indexes the places of in's objects by name; false when a name is
// there twice.
func objectsByName[P object](in []P) (map[types.NamespacedName]int32, bool) {
	byName := make(map[types.NamespacedName]int32, len(in))
	for i, o := range in {
		n := nameOf(o)
		if _, twice := byName[n]; twice {
			return nil, false
		}
		byName[n] = int32(i)
	}
	return byName, true
}

// inNameOrder returns the values of byName (objects' places) in the order of names, or
// false when one of names is not among them.
func inNameOrder[P any](names []types.NamespacedName, byName map[types.NamespacedName]P) ([]P, bool) {
	out := make([]P, len(names))
	for i, n := range names {
		o, ok := byName[n]
		if !ok {
			return nil, false
		}
		out[i] = o
	}
	return out, true
}

// keptNameOrder returns the values of byName (objects' places) sorted from kept, the
// sorted names of a list with some names fewer or more (resorted), and their names; nil
// when kept is not strictly in order. The walk of kept takes each value it finds out of
// byName, so what is left are the new names: byName is the caller's no more.
func keptNameOrder[P any](kept []types.NamespacedName, byName map[types.NamespacedName]P) ([]P, []types.NamespacedName) {
	n := len(byName)
	found := make([]P, 0, n)
	take := func(name types.NamespacedName) bool {
		o, ok := byName[name]
		if ok {
			found = append(found, o)
			delete(byName, name)
		}
		return ok
	}
	rest := func() []types.NamespacedName { return slices.Collect(maps.Keys(byName)) }
	names := resorted(kept, n, take, rest, lessName)
	if names == nil {
		return nil, nil
	}
	out := make([]P, 0, n)
	for _, name := range names {
		if o, isNew := byName[name]; isNew {
			out = append(out, o)
		} else {
			out, found = append(out, found[0]), found[1:]
		}
	}
	return out, names
}

// resorted returns the keys of a set in order, from kept, the sorted keys of an earlier
// set: those of kept the set still has, in kept's order, merged with the set's others,
// sorted. A Backend or route created among ten thousand adds one name: sorting them all
// again took 32 ms of the create at 10,000 routes; this takes one pass over kept and a
// sort of the new keys. n is the size of the set, has tells whether it has a key of kept
// and rest then lists the keys has did not find; nil when kept is not strictly in order
// (a key twice, or not sorted by less) or does not add up with the set.
func resorted[K comparable](kept []K, n int, has func(K) bool, rest func() []K, less func(a, b K) bool) []K {
	out := make([]K, 0, n)
	for i, k := range kept {
		if i > 0 && !less(kept[i-1], k) {
			return nil
		}
		if has(k) {
			out = append(out, k)
		}
	}
	if len(out) == n {
		return out
	}
	extra := rest()
	if len(out)+len(extra) != n {
		return nil
	}
	sort.Slice(extra, func(i, j int) bool { return less(extra[i], extra[j]) })
	merged := make([]K, 0, n)
	i, j := 0, 0
	for i < len(out) || j < len(extra) {
		if j == len(extra) || i < len(out) && less(out[i], extra[j]) {
			merged, i = append(merged, out[i]), i+1
		} else {
			merged, j = append(merged, extra[j]), j+1
		}
	}
	return merged
}

// keysNotIn lists the keys of m not in sorted (by less).
func keysNotIn[K comparable, V any](m map[K]V, sorted []K, less func(a, b K) bool) []K {
	var out []K
	for k := range m {
		if i := sort.Search(len(sorted), func(i int) bool { return !less(sorted[i], k) }); i == len(sorted) || sorted[i] != k {
			out = append(out, k)
		}
	}
	return out
}

// nameOrder returns the order of names remembered under id, or nil.
func (c *Cache) nameOrder(id string, epoch uint64) *nameOrderEntry {
	if e, ok := take(c, c.nameOrders, id, epoch); ok {
		return e
	}
	return nil
}

func (c *Cache) storeNameOrder(id string, epoch uint64, e *nameOrderEntry) {
	e.used = epoch
	put(c, c.nameOrders, id, e)
}
