package translate

import "k8s.io/apimachinery/pkg/types"

// A translation looks Secrets, Services and ConfigMaps up by name. Indexing twenty
// thousand Secrets into a new map on every translation was a ninth of what a change
// among ten thousand Backends allocated (1.6 MB), although the manager's gatherer hands
// a translation the very list of the last one when no object of the kind changed. So
// the Cache keeps each kind's index with the list it was made from, and a list in the
// same memory with the same names in the same places gets that index again. Its
// entries point into that memory, so an object changed in place (which the manager
// never does; tests do) is read as it is now; a renamed one fails the name check.

// nameIndexEntry is the index of one list by name, the list's first object and its
// names in its own order, and the last epoch that used them. None of it is modified
// once stored.
type nameIndexEntry struct {
	used  uint64
	first any // *T
	names []types.NamespacedName
	index any // map[types.NamespacedName]*T
}

// indexedByName is in indexed by namespace/name (the last of a name twice wins), taken
// from the Cache under id when in is the list it was made from.
func indexedByName[T any, P interface {
	*T
	object
}](c *Cache, epoch uint64, id string, in []T) map[types.NamespacedName]*T {
	if len(in) == 0 {
		return map[types.NamespacedName]*T{}
	}
	if e, ok := take(c, c.nameIndexes, id, epoch); ok {
		if first, _ := e.first.(*T); first == &in[0] && sameNamesInPlace(e.names, in, valueObject[T, P]) {
			return e.index.(map[types.NamespacedName]*T)
		}
	}
	index := make(map[types.NamespacedName]*T, len(in))
	indexByName[T, P](in, index)
	put(c, c.nameIndexes, id, &nameIndexEntry{used: epoch, first: &in[0], names: namesOf(in, valueObject[T, P]), index: index})
	return index
}
