package translate

import (
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
	if keys := c.order(id, epoch); len(keys) == len(m) {
		if out, ok := valuesInOrder(keys, m, value); ok {
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
// exactly those names, each once, takes that order from one map of its routes by name.

// nameOrderEntry is the sorted names of one list of objects and the last epoch that
// used them.
type nameOrderEntry struct {
	used  uint64
	names []types.NamespacedName // never modified once stored
}

// sortedObjects returns pointers to the objects of in, sorted by namespace/name as
// sortObjects sorts them. id names the list among those a translation sorts.
func sortedObjects[T any, P interface {
	*T
	object
}](c *Cache, epoch uint64, id string, in []T) []P {
	if names := c.nameOrder(id, epoch); len(names) == len(in) {
		if out, ok := inNameOrder[T, P](names, in); ok {
			return out
		}
	}
	out := make([]P, len(in))
	names := make([]types.NamespacedName, len(in))
	for i := range in {
		out[i] = P(&in[i])
	}
	sortObjects(out)
	for i, o := range out {
		names[i] = nameOf(o)
	}
	c.storeNameOrder(id, epoch, names)
	return out
}

// inNameOrder returns the objects of in in the order of names, or false when in has a
// name twice or one that is not among names.
func inNameOrder[T any, P interface {
	*T
	object
}](names []types.NamespacedName, in []T) ([]P, bool) {
	byName := make(map[types.NamespacedName]P, len(in))
	for i := range in {
		o := P(&in[i])
		n := nameOf(o)
		if _, twice := byName[n]; twice {
			return nil, false
		}
		byName[n] = o
	}
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

// nameOrder returns the sorted names remembered under id, or nil.
func (c *Cache) nameOrder(id string, epoch uint64) []types.NamespacedName {
	if e, ok := take(c, c.nameOrders, id, epoch); ok {
		return e.names
	}
	return nil
}

func (c *Cache) storeNameOrder(id string, epoch uint64, names []types.NamespacedName) {
	put(c, c.nameOrders, id, &nameOrderEntry{used: epoch, names: names})
}
