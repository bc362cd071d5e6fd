package controllers

import (
	"context"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patching a changed kind's list instead of listing it again. A list from the informer
// cache goes through every object of the kind (at 10,000 Backends some 8 ms of a
// change's 50, 2026-12-02), although a watch event names the one object that changed.
// So the counting predicate also notes the name of each event's object; the next
// gather copies the kind's last list and replaces, adds or removes only the objects
// named, each read from the same cache by name. The copy keeps the last list as it was:
// the last translation holds it and compares the new one against it.
//
// The name is noted before the event is counted, and a gather reads the count before it
// takes the names: every event the count covers has its name among those taken (or
// among those an earlier gather took and applied), so the patched list holds whatever
// the cache held for each name when it was read, as a list would. A name taken whose
// event the count does not cover yet is read early and read again by the next gather:
// harmless. A kind listed while names are noted lists again in full when more than
// patchLimit names wait, or when an event came without an object to name (a deleted
// object the informer lost track of).

// patchLimit is the most names a gather reads one by one; past it, listing the kind is
// cheaper than that many reads and a copy.
const patchLimit = 256

// touchedNames is the names of one kind's objects that changed since the last gather
// took them.
type touchedNames struct {
	mu       sync.Mutex
	names    map[types.NamespacedName]struct{}
	overflow bool
}

// note records the name of an event's object; nil (no object) makes the next gather
// list the kind in full.
func (t *touchedNames) note(obj client.Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.overflow {
		return
	}
	if obj == nil || len(t.names) >= patchLimit {
		t.overflow, t.names = true, nil
		return
	}
	if t.names == nil {
		t.names = map[types.NamespacedName]struct{}{}
	}
	t.names[client.ObjectKeyFromObject(obj)] = struct{}{}
}

// take returns the names noted since the last take and forgets them; ok is false when
// they overflowed, and the kind must be listed in full.
func (t *touchedNames) take() (names []types.NamespacedName, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	names, ok = nil, !t.overflow
	for n := range t.names {
		names = append(names, n)
	}
	t.names, t.overflow = nil, false
	return names, ok
}

// patchFunc returns a new list that is kept with each named object replaced by the
// cache's, added or removed, and the position of each object in it. index is kept's
// (nil: not built yet); it is updated in place to become the new list's.
type patchFunc func(ctx context.Context, cache client.Reader, kept client.ObjectList, index map[types.NamespacedName]int, names []types.NamespacedName) (client.ObjectList, map[types.NamespacedName]int, error)

// patcher is the patchFunc of a list type L whose items are T; items gives a list's
// items.
func patcher[T any, PT interface {
	*T
	client.Object
}, L any, PL interface {
	*L
	client.ObjectList
}](items func(PL) *[]T) patchFunc {
	return func(ctx context.Context, cache client.Reader, kept client.ObjectList, index map[types.NamespacedName]int, names []types.NamespacedName) (client.ObjectList, map[types.NamespacedName]int, error) {
		from := *items(kept.(PL))
		if index == nil {
			index = indexOf[T, PT](from)
		}
		out := PL(new(L))
		*items(out) = slices.Clone(from)
		return out, index, patchItems[T, PT](ctx, cache, items(out), index, names)
	}
}

// listPatch is what the last gather did to a kind's list when it patched it: the list
// it started from, the names it read and the position of each object in the new list;
// zero when the kind was listed in full or handed out again. The walks over the lists
// read it to redo only the named objects (gather_walks.go).
type listPatch struct {
	from  client.ObjectList
	names []types.NamespacedName
	index map[types.NamespacedName]int
}

// patch patches kind k's kept list with the objects of names. Until it succeeds the
// kind has no kept list: a failed patch may have half updated the index, and the next
// gather lists the kind in full.
func (g *gatherer) patch(ctx context.Context, k listKind, kept keptList, seen uint64, names []types.NamespacedName, patch patchFunc) (client.ObjectList, error) {
	if len(names) == 0 { // the events counted since were named to an earlier gather
		g.kept[k].events = seen
		return kept.list, nil
	}
	g.kept[k] = keptList{}
	out, index, err := patch(ctx, g.cache, kept.list, kept.index, names)
	if err != nil {
		return nil, err
	}
	g.kept[k] = keptList{events: seen, list: out, index: index}
	g.patched[k] = listPatch{from: kept.list, names: names, index: index}
	return out, nil
}

// indexOf maps each item's name to its position.
func indexOf[T any, PT interface {
	*T
	client.Object
}](items []T) map[types.NamespacedName]int {
	index := make(map[types.NamespacedName]int, len(items))
	for i := range items {
		index[client.ObjectKeyFromObject(PT(&items[i]))] = i
	}
	return index
}

// patchItems reads each named object from the cache into items: in place of the one of
// that name, at the end when new, and a removed one's place taken by the last item.
func patchItems[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, cache client.Reader, items *[]T, index map[types.NamespacedName]int, names []types.NamespacedName) error {
	for _, name := range names {
		obj := PT(new(T))
		err := cache.Get(ctx, name, obj)
		at, had := index[name]
		switch {
		case apierrors.IsNotFound(err):
			if had {
				removeItem[T, PT](items, index, at)
			}
		case err != nil:
			return err
		case had:
			(*items)[at] = *obj
		default:
			index[name] = len(*items)
			*items = append(*items, *obj)
		}
	}
	return nil
}

// removeItem removes the item at position at, moving the last item there.
func removeItem[T any, PT interface {
	*T
	client.Object
}](items *[]T, index map[types.NamespacedName]int, at int) {
	delete(index, client.ObjectKeyFromObject(PT(&(*items)[at])))
	last := len(*items) - 1
	if at != last {
		(*items)[at] = (*items)[last]
		index[client.ObjectKeyFromObject(PT(&(*items)[at]))] = at
	}
	var zero T
	(*items)[last] = zero
	*items = (*items)[:last]
}
