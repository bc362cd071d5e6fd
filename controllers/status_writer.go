package controllers

import (
	"context"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/controllers/status"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// statusWriter stores translation's statuses: only when something changed (so a resync
// changes no resourceVersion), keeping transition times and other controllers' entries,
// retrying on conflicts.
type statusWriter struct {
	c client.Client
	// fresh reads from the API server, for when the cache is behind (read); nil reads
	// only c.
	fresh      client.Reader
	controller gwapiv1.GatewayController
	now        func() time.Time
	// events receives an Event per condition that turns False or recovers
	// (status_events.go); nil emits none.
	events record.EventRecorder
	// gathered are the objects of the translation written last, verified what the
	// stored statuses were last found to say (status_gathered.go). Only write uses
	// them: writes never run at once.
	gathered gatheredIndex
	verified verifiedStatuses
	// deferred is how many objects the last write left unchecked for the next one
	// when it yielded (0 when it checked every status): portcullis_status_writes_deferred.
	deferred atomic.Int64
}

// write stores every status; it returns the errors of the objects it could not update.
// res is what was translated: routes and policies it holds that carry an entry of ours
// but got no status this time lose that entry. Objects are written in parallel (see
// statusWorkers); each object's read-merge-write stays one sequence.
//
// yield (nil: never) is asked before each write: once it says yes, the write stops
// handing out objects and reports that it yielded; the objects left are written by the
// next write, from a newer translation (status_yield.go).
func (w *statusWriter) write(ctx context.Context, st translate.Statuses, res *egress.Resources, yield func() bool) (yielded bool, err error) {
	w.gathered.update(res)
	q := newWriteQueue(statusWorkers, yield)
	defer func() {
		// A write cut short saw only some objects: what it did not see stays verified.
		if yielded = q.cut; !yielded {
			w.verified.sweep()
		}
		w.deferred.Store(int64(q.dropped))
	}()
	for name, want := range st.GatewayClasses {
		q.do(func() error {
			return w.update(ctx, types.NamespacedName{Name: name}, &gwapiv1.GatewayClass{}, want, func(o client.Object) bool {
				gc := o.(*gwapiv1.GatewayClass)
				changed := w.mergeConditions(&gc.Status.Conditions, want.Conditions)
				changed = changed || !equalJSON(gc.Status.SupportedFeatures, want.SupportedFeatures)
				gc.Status.SupportedFeatures = want.SupportedFeatures
				return changed
			})
		})
	}
	for key, want := range st.Gateways {
		q.do(func() error {
			return w.update(ctx, parseKey(key), &gwapiv1.Gateway{}, want, func(o client.Object) bool {
				return w.mergeGateway(&o.(*gwapiv1.Gateway).Status, want)
			})
		})
	}
	settled, pending := pendingLast(unverified(w, reflect.TypeFor[*egressv1alpha1.Backend](), st.Backends, storedBackendStatus), st.Backends)
	q.inTurns(w.backendWrites(ctx, st, settled), w.routeWrites(ctx, st))
	for key, want := range st.BackendTLSPolicies {
		q.do(func() error {
			return w.update(ctx, parseKey(key), &gwapiv1.BackendTLSPolicy{}, want, func(o client.Object) bool {
				p := o.(*gwapiv1.BackendTLSPolicy)
				merged := status.MergeAncestors(p.Status.Ancestors, want, w.controller, w.now())
				changed := !status.AncestorsEqual(p.Status.Ancestors, merged)
				p.Status.Ancestors = merged
				return changed
			})
		})
	}
	w.dropStale(ctx, q, st, res)
	w.writeXBackends(ctx, q, st, res)
	q.inTurns(w.backendWrites(ctx, st, pending))
	return false, q.wait()
}

// backendWrites are the status writes of the Backends keys names.
func (w *statusWriter) backendWrites(ctx context.Context, st translate.Statuses, keys []string) []func() error {
	out := make([]func() error, 0, len(keys))
	for _, key := range keys {
		want := st.Backends[key]
		out = append(out, func() error {
			return w.update(ctx, parseKey(key), &egressv1alpha1.Backend{}, want, func(o client.Object) bool {
				return w.mergeBackend(&o.(*egressv1alpha1.Backend).Status, want)
			})
		})
	}
	return out
}

// dropStale removes our parent entries from routes, and our ancestor entries from
// BackendTLSPolicies, that translation no longer gave a status: their Gateway was
// deleted, the route moved to another controller's Gateway, or no route reaches the
// policy's Service any more. A stale "Accepted" would claim we serve them.
func (w *statusWriter) dropStale(ctx context.Context, q *writeQueue, st translate.Statuses, res *egress.Resources) {
	w.dropStaleRoutes(ctx, q, st, res)
	for i := range res.BackendTLSPolicies {
		p := &res.BackendTLSPolicies[i]
		key := p.Namespace + "/" + p.Name
		if _, ok := st.BackendTLSPolicies[key]; ok || !(hasAncestorOf(p.Status.Ancestors, w.controller) || w.wroteNewer(p)) {
			continue
		}
		q.do(func() error {
			return w.update(ctx, parseKey(key), &gwapiv1.BackendTLSPolicy{}, nil, func(o client.Object) bool {
				p := o.(*gwapiv1.BackendTLSPolicy)
				merged := append([]gwapiv1.PolicyAncestorStatus{}, status.MergeAncestors(p.Status.Ancestors, nil, w.controller, w.now())...)
				changed := !status.AncestorsEqual(p.Status.Ancestors, merged)
				p.Status.Ancestors = merged
				return changed
			})
		})
	}
}

// wroteNewer tells whether this writer stored entries of its own in a version of the
// gathered obj newer than it: a status written after the gather, which the copy cannot
// show. Without it, an entry written just before the gather that dropped its route
// (the cache not yet holding the write) stayed, saying Accepted for a Gateway that was
// gone, until some later input change.
func (w *statusWriter) wroteNewer(obj client.Object) bool {
	e := w.verified.newerEntry(gatheredKey{reflect.TypeOf(obj), client.ObjectKeyFromObject(obj)}, obj.GetResourceVersion())
	if e == nil {
		return false
	}
	v := reflect.ValueOf(e.want)
	return v.Kind() == reflect.Slice && v.Len() > 0
}

func hasRouteParentOf(parents []gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController) bool {
	for _, p := range parents {
		if p.ControllerName == controller {
			return true
		}
	}
	return false
}

func hasAncestorOf(ancestors []gwapiv1.PolicyAncestorStatus, controller gwapiv1.GatewayController) bool {
	for _, a := range ancestors {
		if a.ControllerName == controller {
			return true
		}
	}
	return false
}

// update reads the object, lets mutate change its status, and writes it only if mutate
// reports a change; once written, the conditions that changed become Events. A deleted
// object is not an error.
// want is the status translation gave (nil when ours is dropped), which mutate merges.
func (w *statusWriter) update(ctx context.Context, key types.NamespacedName, obj client.Object, want any, mutate func(client.Object) bool) error {
	if w.unchanged(key, obj, want, mutate) {
		return nil
	}
	k, conflicted := gatheredKey{reflect.TypeOf(obj), key}, false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := w.read(ctx, k, obj, conflicted); err != nil {
			return err
		}
		conflicted = true // a next attempt follows a conflict
		before := conditionsOf(obj, w.controller)
		if !mutate(obj) {
			return nil
		}
		events := conditionEvents(before, conditionsOf(obj, w.controller))
		if err := w.c.Status().Update(ctx, obj); err != nil {
			return err
		}
		emitConditionEvents(w.events, obj, events)
		return nil
	})
	if err == nil {
		w.verified.store(k, obj.GetResourceVersion(), want)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// read gets the object from the cache, or from the API server when the cache's copy is
// older than a version this writer knows (its own last write not seen yet) or a write
// was just refused as a conflict: a copy older than what is stored can say "nothing to
// write" while the stored status says something else, and nothing would write it
// again.
func (w *statusWriter) read(ctx context.Context, k gatheredKey, obj client.Object, conflicted bool) error {
	if err := w.c.Get(ctx, k.n, obj); err != nil {
		return err
	}
	if w.fresh == nil || (!conflicted && !w.verified.knowsNewer(k, obj.GetResourceVersion())) {
		return nil
	}
	reflect.ValueOf(obj).Elem().SetZero() // decoding would keep fields the fresh copy lacks
	return w.fresh.Get(ctx, k.n, obj)
}

// mergeConditions merges want into *stored and reports whether anything changed.
func (w *statusWriter) mergeConditions(stored *[]metav1.Condition, want []metav1.Condition) bool {
	merged := status.MergeConditions(*stored, want, w.now())
	changed := !status.ConditionsEqual(*stored, merged)
	*stored = merged
	return changed
}

func (w *statusWriter) mergeGateway(stored *gwapiv1.GatewayStatus, want *gwapiv1.GatewayStatus) bool {
	changed := w.mergeConditions(&stored.Conditions, want.Conditions)
	listeners := make([]gwapiv1.ListenerStatus, 0, len(want.Listeners))
	for _, l := range want.Listeners {
		var old []metav1.Condition
		for _, s := range stored.Listeners {
			if s.Name == l.Name {
				old = s.Conditions
				changed = changed || s.AttachedRoutes != l.AttachedRoutes || len(s.SupportedKinds) != len(l.SupportedKinds)
			}
		}
		merged := status.MergeConditions(old, l.Conditions, w.now())
		changed = changed || !status.ConditionsEqual(old, merged)
		l.Conditions = merged
		listeners = append(listeners, l)
	}
	changed = changed || len(stored.Listeners) != len(listeners)
	stored.Listeners = listeners
	if want.Addresses != nil {
		changed = changed || !addressesEqual(stored.Addresses, want.Addresses)
		stored.Addresses = want.Addresses
	}
	return changed
}

func addressesEqual(a, b []gwapiv1.GatewayStatusAddress) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Value != b[i].Value || (a[i].Type == nil) != (b[i].Type == nil) || (a[i].Type != nil && *a[i].Type != *b[i].Type) {
			return false
		}
	}
	return true
}

// mergeBackend compares before it copies: nearly every Backend's status comes out as
// stored, and the copy is only needed for one that is written (the API server's answer
// is decoded into stored, which must not share memory with the translation's result).
func (w *statusWriter) mergeBackend(stored *egressv1alpha1.BackendStatus, want *egressv1alpha1.BackendStatus) bool {
	conds := status.MergeConditions(stored.Conditions, want.Conditions, w.now())
	cmpNext, cmpStored := *want, *stored
	cmpNext.Conditions, cmpStored.Conditions = nil, nil
	if status.ConditionsEqual(stored.Conditions, conds) && equalJSON(cmpNext, cmpStored) {
		return false
	}
	next := *want.DeepCopy()
	next.Conditions = conds
	*stored = next
	return true
}

// parseKey splits "namespace/name" (a cluster-scoped key has no slash).
func parseKey(key string) types.NamespacedName {
	if ns, name, ok := strings.Cut(key, "/"); ok {
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	return types.NamespacedName{Name: key}
}
