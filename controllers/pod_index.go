package controllers

import (
	"context"
	"maps"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// podIndex holds every pod's caller claim (translate.ClaimOf), kept by the pod watch's
// own event handler. The caller table used to be computed from a List of every pod on
// each pod event and each translation: at ten thousand pods that copied 12.6 MB of Pod
// structs each time, a quarter of what a pod event allocated. A claim is a few strings
// and an address.
//
// The handler updates the index before it enqueues the callers reconcile, so a
// reconcile always sees at least the events that caused it (two handlers on one
// informer, an index and a separate watch, would run in either order).
type podIndex struct {
	mu     sync.Mutex
	claims map[types.NamespacedName]translate.CallerClaim
}

func newPodIndex() *podIndex {
	return &podIndex{claims: map[types.NamespacedName]translate.CallerClaim{}}
}

// set records what pod claims now (nothing, once its addresses no longer identify it).
func (x *podIndex) set(obj client.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(pod)
	claim, ok := translate.ClaimOf(pod)
	x.mu.Lock()
	defer x.mu.Unlock()
	if ok {
		x.claims[key] = claim
	} else {
		delete(x.claims, key)
	}
}

// remove forgets a deleted pod.
func (x *podIndex) remove(obj client.Object) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.claims, client.ObjectKeyFromObject(obj))
}

// callers is the caller table of the pods indexed, with the unrestricted prefixes.
func (x *podIndex) callers(unrestricted []netip.Prefix) []ir.Caller {
	x.mu.Lock()
	defer x.mu.Unlock()
	return translate.CallersOf(maps.Values(x.claims), unrestricted)
}

// handler is the pod watch's event handler: it updates the index, then asks for key.
func (x *podIndex) handler(key reconcile.Request) handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			x.set(e.Object)
			q.Add(key)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			x.set(e.ObjectNew)
			q.Add(key)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			x.remove(e.Object)
			q.Add(key)
		},
	}
}
