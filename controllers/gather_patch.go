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

// patchFunc returns a new items slice that is kept with each named object replaced by
// the cache's, added or removed, and the position of each object in it. kept and the
// result are a kind's items as handed out ([]T, or []*T for a Backend); index is kept's
// (nil: not built yet); it is updated in place to become the new slice's.
type patchFunc func(ctx context.Context, cache client.Reader, kept any, index map[types.NamespacedName]int, names []types.NamespacedName) (any, map[types.NamespacedName]int, error)

// holding is how a kind's items hold its objects, E being an item: by value (E is the
// object's type) or by pointer (E is a pointer to it). The Backends are held by
// pointer, so that patching one among 10,000 copies 10,000 pointers (80 KB) and not
// 10,000 Backends (some 4 MB, most of what a Backend's edit allocated, 2026-12-03).
type holding[E any] struct {
	object func(*E) client.Object // the object an item holds
	fresh  func() client.Object   // an empty object to read into
	hold   func(client.Object) E  // the item that holds an object read
}

// byValue holds objects of type T in items of type T.
func byValue[T any, PT interface {
	*T
	client.Object
}]() holding[T] {
	return holding[T]{
		object: func(e *T) client.Object { return PT(e) },
		fresh:  func() client.Object { return PT(new(T)) },
		hold:   func(o client.Object) T { return *(*T)(o.(PT)) },
	}
}

// byPointer holds objects of type T in items of type *T.
func byPointer[T any, PT interface {
	*T
	client.Object
}]() holding[*T] {
	return holding[*T]{
		object: func(e **T) client.Object { return PT(*e) },
		fresh:  func() client.Object { return PT(new(T)) },
		hold:   func(o client.Object) *T { return (*T)(o.(PT)) },
	}
}

// patcher is the patchFunc of items of type E held as h says.
func patcher[E any](h holding[E]) patchFunc {
	return func(ctx context.Context, cache client.Reader, kept any, index map[types.NamespacedName]int, names []types.NamespacedName) (any, map[types.NamespacedName]int, error) {
		from := kept.([]E)
		if index == nil {
			index = indexOf(h, from)
		}
		out := slices.Clone(from)
		err := patchItems(ctx, cache, h, &out, index, names)
		return out, index, err
	}
}

// listPatch is what the last gather did to a kind's list when it patched it: the list
// it started from, the names it read and the position of each object in the new list;
// zero when the kind was listed in full or handed out again. The walks over the lists
// read it to redo only the named objects (gather_walks.go).
type listPatch struct {
	from  any
	names []types.NamespacedName
	index map[types.NamespacedName]int
}

// patch patches kind k's kept list with the objects of names. Until it succeeds the
// kind has no kept list: a failed patch may have half updated the index, and the next
// gather lists the kind in full.
func (g *gatherer) patch(ctx context.Context, k listKind, kept keptList, seen uint64, names []types.NamespacedName, patch patchFunc) (any, error) {
	if len(names) == 0 { // the events counted since were named to an earlier gather
		g.kept[k].events = seen
		return kept.items, nil
	}
	g.kept[k] = keptList{}
	out, index, err := patch(ctx, g.cache, kept.items, kept.index, names)
	if err != nil {
		return nil, err
	}
	g.kept[k] = keptList{events: seen, items: out, index: index}
	g.patched[k] = listPatch{from: kept.items, names: names, index: index}
	return out, nil
}

// indexOf maps each item's name to its position.
func indexOf[E any](h holding[E], items []E) map[types.NamespacedName]int {
	index := make(map[types.NamespacedName]int, len(items))
	for i := range items {
		index[client.ObjectKeyFromObject(h.object(&items[i]))] = i
	}
	return index
}

// patchItems reads each named object from the cache into items: in place of the one of
// that name, at the end when new, and a removed one's place taken by the last item.
func patchItems[E any](ctx context.Context, cache client.Reader, h holding[E], items *[]E, index map[types.NamespacedName]int, names []types.NamespacedName) error {
	for _, name := range names {
		obj := h.fresh()
		err := cache.Get(ctx, name, obj)
		at, had := index[name]
		switch {
		case apierrors.IsNotFound(err):
			if had {
				removeItem(h, items, index, at)
			}
		case err != nil:
			return err
		case had:
			(*items)[at] = h.hold(obj)
		default:
			index[name] = len(*items)
			*items = append(*items, h.hold(obj))
		}
	}
	return nil
}

// removeItem removes the item at position at, moving the last item there.
func removeItem[E any](h holding[E], items *[]E, index map[types.NamespacedName]int, at int) {
	delete(index, client.ObjectKeyFromObject(h.object(&(*items)[at])))
	last := len(*items) - 1
	if at != last {
		(*items)[at] = (*items)[last]
		index[client.ObjectKeyFromObject(h.object(&(*items)[at]))] = at
	}
	var zero E
	(*items)[last] = zero
	*items = (*items)[:last]
}
