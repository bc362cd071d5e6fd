package controllers

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/egress"
)

// gatheredIndex finds the objects a translation read by type and name.
//
// Writing statuses read every object again from the cache (a deep copy each) to merge
// the translated status into it, although nearly all of them came out as they were: at
// 10,000 Backends and routes that was 20,000 copies and merges per reconcile whatever
// changed. The object as gathered for this translation answers the question first: if
// merging into it changes nothing, the stored status already says what translation
// says and nothing is read or written. The gathered object is at most as new as the
// cache's; when it is older (our last write not seen yet, or another writer's), the
// event of that newer version brings another reconcile, which compares again.
type gatheredIndex map[gatheredKey]client.Object

type gatheredKey struct {
	t reflect.Type
	n types.NamespacedName
}

// indexGathered indexes the objects whose statuses the writer writes.
func indexGathered(res *egress.Resources) gatheredIndex {
	idx := make(gatheredIndex, len(res.GatewayClasses)+len(res.Gateways)+len(res.HTTPRoutes)+len(res.TLSRoutes)+
		len(res.TCPRoutes)+len(res.BackendTLSPolicies)+len(res.Backends)+len(res.XBackends))
	add := func(o client.Object) {
		idx[gatheredKey{reflect.TypeOf(o), client.ObjectKeyFromObject(o)}] = o
	}
	each(res.GatewayClasses, add)
	each(res.Gateways, add)
	each(res.HTTPRoutes, add)
	each(res.TLSRoutes, add)
	each(res.TCPRoutes, add)
	each(res.BackendTLSPolicies, add)
	each(res.Backends, add)
	each(res.XBackends, add)
	return idx
}

// each calls f with a pointer to every element of objs.
func each[T any, P interface {
	*T
	client.Object
}](objs []T, f func(client.Object)) {
	for i := range objs {
		f(P(&objs[i]))
	}
}

// unchanged tells whether the stored status of the object (of obj's type, named key)
// already says want: the gathered object is the version whose status was last found or
// written to say the same want, or merging want into the gathered object changes
// nothing. mutate runs on a shallow copy: the merges replace status fields and never
// write into what they share with the gathered object.
func (w *statusWriter) unchanged(key types.NamespacedName, obj client.Object, want any, mutate func(client.Object) bool) bool {
	k := gatheredKey{reflect.TypeOf(obj), key}
	g, ok := w.gathered[k]
	if !ok {
		return false
	}
	if w.verified.says(k, g.GetResourceVersion(), want) {
		return true
	}
	v := reflect.ValueOf(g).Elem()
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	if mutate(c.Interface().(client.Object)) {
		return false
	}
	w.verified.store(k, g.GetResourceVersion(), want)
	return true
}

// verifiedStatuses remembers, per object, the resourceVersion whose status was last
// found (or written) to say what translation wanted, and that want. Merging costs tens
// of microseconds an object (conditions, transition times, JSON comparison); telling
// that neither the object nor the want changed costs a lookup and a comparison of two
// values translation made. The wants are translation's own statuses, which nothing
// modifies once written. Entries of objects no write asked about are dropped.
type verifiedStatuses struct {
	mu      sync.Mutex
	entries map[gatheredKey]*verifiedEntry
	round   uint64
}

type verifiedEntry struct {
	resourceVersion string
	want            any
	round           uint64
}

// says tells whether version rv of the object was verified to say want.
func (v *verifiedStatuses) says(k gatheredKey, rv string, want any) bool {
	v.mu.Lock()
	e := v.entries[k]
	if e != nil {
		e.round = v.round
	}
	v.mu.Unlock()
	return e != nil && rv != "" && e.resourceVersion == rv && sameWant(e.want, want)
}

func (v *verifiedStatuses) store(k gatheredKey, rv string, want any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.entries == nil {
		v.entries = map[gatheredKey]*verifiedEntry{}
	}
	v.entries[k] = &verifiedEntry{resourceVersion: rv, want: want, round: v.round}
}

// sweep ends a write: entries it did not use go, and the next write starts a round.
func (v *verifiedStatuses) sweep() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for k, e := range v.entries {
		if e.round != v.round {
			delete(v.entries, k)
		}
	}
	v.round++
}
