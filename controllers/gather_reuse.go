package controllers

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Listing only the kinds that changed. A gather lists every kind translation reads from
// the informer cache, and a list copies each object into a new slice: at 10,000 Backends
// and 10,000 HTTPRoutes, a Backend's edit copied the 10,000 routes as well (about half
// of the gather, and 10 MB a change). A kind's last list is handed out again while its
// informer has delivered no event since that list was taken, so it equals what listing
// again would return.
//
// The count is taken by a predicate placed before the watch's own (counting), which
// runs in the informer's handler after the informer's store was updated and before the
// event can enqueue a reconcile. So a reconcile an event causes always sees the count
// that event made and lists the kind again; an event whose count comes after a gather
// read it brings another reconcile (or, filtered out, changes nothing translation
// reads: a status). Every event counts, also the ones the watch then filters (our own
// status writes): the list handed out again is the list the informer would give, not
// only its specs, which the status writer compares against. A kind without a counting
// watch (a gatherer not wired to watches, as in tests) is always listed.

// listKind is one kind the gatherer lists from the informer cache.
type listKind int

const (
	listGatewayClasses listKind = iota
	listGateways
	listHTTPRoutes
	listTLSRoutes
	listTCPRoutes
	listReferenceGrants
	listBackendTLSPolicies
	listBackends
	listServices
	listEndpointSlices
	listNamespaces
	listXBackends
	numListKinds
)

// listEvents counts each kind's informer events; counted marks the kinds whose watch
// counts.
type listEvents struct {
	events  [numListKinds]atomic.Uint64
	counted [numListKinds]atomic.Bool
	touched [numListKinds]touchedNames // gather_patch.go
}

// counting returns the watch option of kind k: its counter first, then the watch's own
// predicates.
func (e *listEvents) counting(k listKind, preds ...predicate.Predicate) builder.Predicates {
	return builder.WithPredicates(append([]predicate.Predicate{e.counter(k)}, preds...)...)
}

// counter is a predicate that counts every event of kind k and passes it on. The
// object's name is noted before the count (gather_patch.go says why).
func (e *listEvents) counter(k listKind) predicate.Predicate {
	e.counted[k].Store(true)
	return passingEach(func(obj client.Object) {
		e.touched[k].note(obj)
		e.events[k].Add(1)
	})
}

// passingEach is a predicate that passes every event on after calling seen with its
// object (the new one of an update).
func passingEach(seen func(client.Object)) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(ev event.CreateEvent) bool { seen(ev.Object); return true },
		UpdateFunc:  func(ev event.UpdateEvent) bool { seen(ev.ObjectNew); return true },
		DeleteFunc:  func(ev event.DeleteEvent) bool { seen(ev.Object); return true },
		GenericFunc: func(ev event.GenericEvent) bool { seen(ev.Object); return true },
	}
}

// keptList is a kind's last items, the count of its events when they were taken and
// the position of each object in them (built when first patched).
type keptList struct {
	events uint64
	items  any
	index  map[types.NamespacedName]int
}

// list returns kind k's items as l lists them, or the kind's last items when no event of
// the kind came since they were taken, or those patched with the objects the events
// named (gather_patch.go). The count is read before listing: an event that lands during
// the list is counted after it, and the next gather lists again.
func (g *gatherer) list(ctx context.Context, l gatherList) (any, error) {
	k := l.kind
	g.patched[k] = listPatch{}
	if g.events == nil || !g.events.counted[k].Load() {
		return l.list(ctx, g.cache)
	}
	seen := g.events.events[k].Load()
	kept := g.kept[k]
	if kept.items != nil && kept.events == seen {
		return kept.items, nil
	}
	names, ok := g.events.touched[k].take()
	if kept.items != nil && ok {
		return g.patch(ctx, k, kept, seen, names, l.patch)
	}
	g.kept[k] = keptList{}
	items, err := l.list(ctx, g.cache)
	if err != nil {
		return nil, err
	}
	g.kept[k] = keptList{events: seen, items: items}
	return items, nil
}
