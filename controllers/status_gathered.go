package controllers

import (
	"reflect"

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
	idx := gatheredIndex{}
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

// unchanged tells whether merging into the gathered copy of the object (of obj's type,
// named key) changes nothing. mutate runs on a shallow copy: the merges replace status
// fields and never write into what they share with the gathered object.
func (w *statusWriter) unchanged(key types.NamespacedName, obj client.Object, mutate func(client.Object) bool) bool {
	g, ok := w.gathered[gatheredKey{reflect.TypeOf(obj), key}]
	if !ok {
		return false
	}
	v := reflect.ValueOf(g).Elem()
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	return !mutate(c.Interface().(client.Object))
}
