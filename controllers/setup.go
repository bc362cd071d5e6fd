package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// NewReconciler makes the reconciler for a manager.
func NewReconciler(mgr ctrl.Manager, opts Options) *Reconciler {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	recorder := mgr.GetEventRecorderFor("portcullis")
	r := &Reconciler{
		client:   mgr.GetClient(),
		opts:     opts,
		gather:   newGatherer(mgr.GetClient(), mgr.GetAPIReader()),
		cache:    translate.NewCache(),
		status:   &statusWriter{c: mgr.GetClient(), fresh: mgr.GetAPIReader(), controller: opts.ControllerName, now: opts.Clock, events: recorder},
		recorder: recorder,
		log:      mgr.GetLogger().WithName("portcullis"),
		live:     map[string]types.NamespacedName{},
		holding:  map[string]time.Time{},

		bindRetries: map[string]time.Time{},
		kicked:      map[string]time.Time{},
		lateSince:   map[string]time.Time{},
		nacks:       map[string]*nackSearch{},

		lastPublished: map[string]ir.Gateway{},
		leader:        newLeadership(),
		pods:          newPodIndex(),

		callersPublished: make(chan struct{}, 1),
	}
	var envoysApplying func() bool
	if opts.XDS != nil {
		envoysApplying = func() bool { return !opts.XDS.Answered() }
	}
	r.idle = newIdleCollector(r.wakeups.Load, envoysApplying)
	return r
}

// SetupWithManager watches every input and maps each event to the single reconcile key;
// DNS guard and xDS changes arrive through channels.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.opts.Metrics != nil {
		r.metrics = newOperatorMetrics(r)
		if err := r.opts.Metrics.Register(r.metrics); err != nil {
			return fmt.Errorf("registering the operator metrics: %w", err)
		}
	}
	// Every wake-up is counted: a status write yields to it (status_yield.go).
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		r.otherWakes.Add(1)
		r.wakeups.Add(1)
		return []reconcile.Request{reconcileKey}
	})
	// input is all for the objects translation reads: it counts the event first, so the
	// reconcile it causes translates again (translation_reuse.go).
	input := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		r.inputEvents.Add(1)
		r.wakeups.Add(1)
		return []reconcile.Request{reconcileKey}
	})
	// Our own status writes change resourceVersion but not generation: ignore them.
	specOnly := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{})
	// Gateways and classes also carry settings in annotations (tenant isolation, access log).
	specOrSettings := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	// Every listed kind's events are counted before the predicates filter them, so that
	// a gather lists only the kinds that changed (gather_reuse.go).
	r.gather.events = &listEvents{}
	counting := r.gather.events.counting
	if err := mgr.Add(r.leader); err != nil {
		return err
	}
	// Every replica translates and serves xDS (leader.go); only writes wait for the lease.
	b := ctrl.NewControllerManagedBy(mgr).Named("portcullis").
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		Watches(&gwapiv1.GatewayClass{}, input, counting(listGatewayClasses, specOrSettings)).
		Watches(&gwapiv1.Gateway{}, input, counting(listGateways, specOrSettings)).
		Watches(&gwapiv1.HTTPRoute{}, input, counting(listHTTPRoutes, specOnly)).
		Watches(&gwapiv1.TLSRoute{}, input, counting(listTLSRoutes, specOnly)).
		Watches(&gwapiv1.TCPRoute{}, input, counting(listTCPRoutes, specOnly)).
		Watches(&gwapiv1.ReferenceGrant{}, input, counting(listReferenceGrants)).
		Watches(&gwapiv1.BackendTLSPolicy{}, input, counting(listBackendTLSPolicies, specOnly)).
		Watches(&egressv1alpha1.Backend{}, input, counting(listBackends, specOnly)).
		Watches(&corev1.Service{}, input, counting(listServices)).
		Watches(&discoveryv1.EndpointSlice{}, input, counting(listEndpointSlices)).
		Watches(&corev1.Namespace{}, input, counting(listNamespaces)).
		Watches(&corev1.Pod{}, r.pods.handler(callersKey), builder.WithPredicates(callerChanged)).
		// Our lockdown policies are not read by translation (syncLockdown reads them
		// itself, reused translation or not): their events only wake the reconciler.
		Watches(&networkingv1.NetworkPolicy{}, all, builder.WithPredicates(managedOnly)).
		WatchesMetadata(&corev1.Secret{}, input, builder.WithPredicates(r.gather.refNotes.noting("Secret"))).
		WatchesMetadata(&corev1.ConfigMap{}, input, builder.WithPredicates(r.gather.refNotes.noting("ConfigMap"))).
		// A DNS answer the last translation already read is no news (dns_wakes.go).
		WatchesRawSource(source.Channel(forwardIf(ctx, r.opts.DNS.Changes(), r.unseenDNSChange(ctx)), all)).
		WatchesRawSource(source.Channel(forward(ctx, heldWhileApplying(ctx, newsOnly(ctx, r.opts.XDS.Changes(), r.opts.XDS.News), r.opts.XDS.Applying, xdsWakeHold)), all)).
		WatchesRawSource(source.Channel(forward(ctx, r.callersPublished), all)).
		WatchesRawSource(source.Channel(forward(ctx, r.leader.changes), all))
	b, err := r.watchXBackends(mgr, b, input, specOnly)
	if err != nil {
		return err
	}
	return b.Complete(r)
}

// forward turns any notification channel into the generic events a source.Channel takes.
func forward[T any](ctx context.Context, in <-chan T) <-chan event.GenericEvent {
	return forwardIf(ctx, in, func(T) bool { return true })
}

// forwardIf is forward for the notifications pass accepts (it may wait to decide).
func forwardIf[T any](ctx context.Context, in <-chan T, pass func(T) bool) <-chan event.GenericEvent {
	out := make(chan event.GenericEvent, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case v := <-in:
				if !pass(v) {
					continue
				}
				select {
				case out <- event.GenericEvent{Object: &egressv1alpha1.Backend{}}:
				default: // one pending event is enough: every reconcile translates everything
				}
			}
		}
	}()
	return out
}

// managedOnly passes events of objects the manager owns (so a deleted or edited lockdown
// policy is put back) and ignores everyone else's.
var managedOnly = predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[managedByLabel] == managedBy })
