package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds"
)

// Options wire the reconciler to the rest of the manager.
type Options struct {
	// ControllerName is the GatewayClass controllerName served.
	ControllerName gwapiv1.GatewayController
	// XDS is the one place snapshots are published.
	XDS *xds.Server
	// DNS resolves and vets every outside name.
	DNS *dnsguard.Store
	// AddressPolicy vets literal IP destinations (the DNS guard's).
	AddressPolicy egress.AddressPolicy
	// ClusterCIDRs are the pod and service ranges (the DNS guard's --cluster-cidr): Service
	// endpoints outside them must pass AddressPolicy (translate.Options.ClusterCIDRs).
	ClusterCIDRs []netip.Prefix
	// Provider runs each Gateway's Envoy fleet.
	Provider infra.Provider
	// Envoy are the options of the Envoy configuration builders.
	Envoy envoyconfig.Options
	// EnvoyEgress, when set, keeps each Gateway's Envoy egress NetworkPolicy (in a
	// cluster; Envoys on a host have none).
	EnvoyEgress *EnvoyEgress
	// Metrics, when set, receives the operator's metrics (controller-runtime's registry
	// in the manager).
	Metrics prometheus.Registerer
	// Clock is the time source of status transition times (time.Now when nil).
	Clock func() time.Time
	// Unrestricted are source ranges served every route of isolated Gateways (local
	// mode's own machine, --unrestricted-caller); none by default.
	Unrestricted []netip.Prefix
	// Replica names this replica's Pod, when it runs in a cluster beside others: its
	// fleet reports need it (fleet_report.go). Nil: no reports are written or read.
	Replica *Replica
	// HeldPorts are ports other processes hold where the host provider's Envoys bind
	// listeners (translate.Options.HeldPorts); none in a cluster.
	HeldPorts map[uint32]string
	// OwnPorts returns the ports of Portcullis' own components beside Envoy
	// (translate.Options.OwnPorts), read at every translation: the host provider's
	// Envoys take admin ports as they start. Nil: none.
	OwnPorts func() map[uint32]string
	// OwnAddresses are this machine's addresses beyond loopback
	// (translate.Options.OwnAddresses); on a host only.
	OwnAddresses []netip.Addr
	// FirstAnswerWait bounds how long a translation waits for the first DNS answers of
	// names it has just begun to track; zero means firstAnswerWait. Tests that apply an
	// object during the wait lengthen it, so that a loaded machine cannot outlast it.
	FirstAnswerWait time.Duration
}

// Reconciler is the one controller of Portcullis. Every watched change enqueues the same
// key, so a burst of changes coalesces into one translation of the whole snapshot.
type Reconciler struct {
	client client.Client
	opts   Options
	gather *gatherer
	// cache is the translator's (units, route sides, the last translation a delta
	// starts from), the reconciler's own.
	cache    *translate.Cache
	status   *statusWriter
	leader   *leadership
	recorder record.EventRecorder
	log      logr.Logger
	metrics  *operatorMetrics

	mu sync.Mutex
	// live holds the Gateways published last time, so those that disappear are removed.
	live map[string]types.NamespacedName
	// versions remembers what each recently published version carries, to tell whether
	// Envoy runs the current generation of a Gateway or Backend.
	versions versionLogs
	// programmedGateways is the generation of each Gateway the last marking found
	// Programmed (programmed_forgotten.go).
	programmedGateways map[string]int64
	// lastPublished is the configuration last published per Gateway, retiring clusters
	// included (retiring.go).
	lastPublished map[string]ir.Gateway
	// warned holds the warnings already emitted, so each becomes one Event, not one per
	// reconcile.
	warned map[translate.Warning]bool
	// callers is the caller table last published (callers.go), computed from pods, the
	// pod watch's claims (pod_index.go).
	callers []ir.Caller
	pods    *podIndex
	// holding is when staging began waiting for each Gateway's Envoys
	// (staging_patience.go); gatewayObjects are this reconcile's Gateways, for Events.
	holding        map[string]time.Time
	gatewayObjects map[string]*gwapiv1.Gateway
	// bindRetries is when each Gateway's configuration was last resent after a bind
	// failure (listener_retry.go).
	bindRetries map[string]time.Time
	// lateSince is when each Envoy ("gateway\x00node") was first seen late, kicked when
	// its xDS stream was last closed (staging_patience.go).
	lateSince, kicked map[string]time.Time
	// nacks is each Gateway's NACK isolation (nack_isolation.go).
	nacks map[string]*nackSearch
	// clusterPolicy is the cluster network policy API the cluster serves (nil: none),
	// and when discovery was last asked (cluster_lockdown.go).
	clusterPolicy struct {
		api     *clusterPolicyAPI
		checked time.Time
	}
	// inputEvents counts the watch events that may change what translation reads;
	// last is the last translation, reused while no such event came (translation_reuse.go).
	inputEvents atomic.Uint64
	// wakeups counts every event that enqueues a reconcile: a status write yields to
	// the reconcile they bring (status_yield.go).
	wakeups atomic.Uint64
	// otherWakes counts the wake-ups that are not input events; run is the last
	// reconcile, which a reconcile woken only by input it already read repeats
	// (nothing_new.go).
	otherWakes atomic.Uint64
	run        lastRun
	// callersPublished wakes the reconciler after the callers reconcile published: the
	// xDS server's notice of a publish is no news to it (xds_wakes.go).
	callersPublished chan struct{}
	// translating is set while a translation runs, and dnsSeen is the DNS guard's
	// count of signalled changes when the last translation in use read its answers
	// (dns_wakes.go).
	translating atomic.Bool
	dnsSeen     atomic.Uint64
	last        *lastTranslation
	// names is the last walk for the names the DNS guard resolves (gather_walks.go):
	// the guard is told them again only when they may have changed.
	names namesWalk
	marks backendMarks
	// idle collects garbage when the manager falls idle (idle_gc.go).
	idle *idleCollector
	// started and warm hold the first publication until the DNS guard has answered
	// (warmup.go).
	started time.Time
	warm    bool
	// peers are the other replicas' fleets, read by the leader each reconcile; reported
	// and reportedAt are this follower's last report (fleet_report.go).
	peers      map[string][]fleetReport
	reported   map[string]fleetReport
	reportedAt time.Time
}

// reconcileKey is the single work item every event maps to.
var reconcileKey = ctrl.Request{NamespacedName: types.NamespacedName{Name: "portcullis"}}

// Reconcile gathers, translates, publishes, provisions and writes statuses.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer r.idle.reconciled()
	if req == callersKey {
		return r.reconcileCallers(ctx)
	}
	if requeue, ok := r.nothingNew(time.Now()); ok {
		r.metrics.unchanged()
		r.log.V(1).Info("nothing new since the last reconcile", "requeueAfter", requeue)
		return ctrl.Result{RequeueAfter: requeue}, nil
	}
	others := r.otherWakes.Load()
	out, clean, err := r.reconcile(ctx)
	r.ran(clean && err == nil, others, out.RequeueAfter)
	return out, err
}

// reconcile is one whole reconcile; clean when no status write was cut short.
func (r *Reconciler) reconcile(ctx context.Context) (ctrl.Result, bool, error) {
	start, woken := time.Now(), r.wakeups.Load()
	res, result, own, how, err := r.translation(ctx)
	if err != nil || res == nil {
		return ctrl.Result{RequeueAfter: warmupRetry}, false, err // nil: the DNS guard is warming up
	}
	yielded := false
	gateways := gatewaysByKey(res)
	r.gatewayObjects = gateways
	problems := r.publish(ctx, &result, gateways)
	r.removeGone(ctx, result)
	r.peers = nil
	if r.writes() {
		r.peers = r.peerFleets(ctx)
	}
	r.markProgrammed(&result, problems, gateways)
	report := r.reportFleets(ctx)
	if r.writes() {
		r.emitWarnings(result.Warnings)
		var werr error
		yielded, werr = r.status.write(ctx, result.Statuses, res, r.yieldAfter(woken))
		if yielded {
			r.metrics.statusWriteYielded()
			r.log.V(1).Info("status write yielded to newer input; the next reconcile writes the rest")
		}
		err = errors.Join(werr, r.syncLockdown(ctx, res, result.Gateways), r.narrowEnvoyEgress(ctx, result.Gateways, gateways, problems), heldBackErrors(problems))
	}
	r.metrics.observe(time.Since(start), how, result.Statuses.Backends)
	r.log.V(1).Info("translated", "gateways", len(result.Gateways), "backends", len(res.Backends), "reused", how == translationReused,
		"translation", how, "duration", time.Since(start))
	return ctrl.Result{RequeueAfter: soonest(r.requeueWhileHolding(), r.retryBindFailures(), report, r.ownPortsMoved(own), r.probeAnswered(),
		untilChanges(result.ValidUntil, r.opts.Clock()))}, !yielded, err
}

// How a reconcile came by its translation: the last one reused, a delta of it
// (egress/translate/delta.go) or a full translation, or none because nothing was new
// (nothing_new.go): the metric's label values.
const (
	translationNone   = "unchanged"
	translationReused = "reused"
	translationDelta  = "delta"
	translationFull   = "translated"
)

// translation gathers and translates the inputs, or reuses the last translation when
// nothing it read has changed (translation_reuse.go). It returns no resources while the
// DNS guard warms up.
func (r *Reconciler) translation(ctx context.Context) (res *egress.Resources, result translate.Result, own map[uint32]string, how string, err error) {
	r.translating.Store(true)
	defer r.translating.Store(false)
	events, own, now := r.inputEvents.Load(), r.ownPorts(), r.opts.Clock()
	if r.last != nil {
		dns := r.opts.DNS.Signalled()
		if res, result, ok := r.reusable(events, own, r.opts.DNS.Addresses, now); ok {
			r.dnsSeen.Store(dns)
			return res, result, own, translationReused, nil
		}
	}
	if res, events, err = r.gatherAnswered(ctx, events); err != nil {
		return nil, result, own, translationFull, err
	}
	dns := r.opts.DNS.Signalled()
	addrs := r.opts.DNS.Addresses()
	if r.warming(addrs) {
		return nil, result, own, translationFull, nil
	}
	r.dnsSeen.Store(dns)
	deltas := r.cache.Deltas()
	result = translate.Translate(res, addrs, translate.Options{
		AddressPolicy: r.opts.AddressPolicy, ClusterCIDRs: r.opts.ClusterCIDRs, ControllerName: string(r.opts.ControllerName), Now: now,
		Unrestricted: r.opts.Unrestricted, HeldPorts: r.opts.HeldPorts, OwnPorts: own, OwnAddresses: r.opts.OwnAddresses, Cache: r.cache})
	r.callers = r.pods.callers(r.opts.Unrestricted)
	r.remember(events, own, addrs, res, result)
	if how = translationFull; r.cache.Deltas() != deltas {
		how = translationDelta
	}
	return res, result, own, how, nil
}

// firstAnswerWait bounds how long a translation waits for the first answers of names it
// has just begun to track (a new FQDN Backend): the guard usually answers in a few
// milliseconds, and a Backend published with its addresses saves a translation and a
// publish; a slow or failing DNS server costs each new name this much once, after which
// the Backend goes out without addresses and gets them when the answer comes, as
// before.
const firstAnswerWait = 200 * time.Millisecond

// gatherAnswered gathers the inputs (counted at events) and waits for the first DNS
// answers of the names they newly hold. Objects are often applied together, a Backend
// and its HTTPRoute milliseconds apart, and the route's event then comes during that
// wait: the inputs are gathered again (regatherLimit times at most) and translated with
// it, instead of the Backend being translated and published alone and the route only
// by the next reconcile (at 10,000 Backends that one began some 170 ms after the
// route's create, 2026-11-29). It returns the inputs and the count they were gathered at.
func (r *Reconciler) gatherAnswered(ctx context.Context, events uint64) (*egress.Resources, uint64, error) {
	for again := 0; ; again++ {
		res, err := r.gather.gather(ctx)
		if err != nil {
			return nil, events, err
		}
		var added []string
		if names, same := r.names.names(res, r.gather.patched[listBackends]); !same {
			added = r.opts.DNS.SetNames(names)
		}
		if !r.warm || len(added) == 0 {
			return res, events, nil
		}
		r.opts.DNS.AwaitFirstAnswers(ctx, added, cmp.Or(r.opts.FirstAnswerWait, firstAnswerWait))
		latest := r.inputEvents.Load()
		if latest == events || again == regatherLimit {
			return res, events, nil
		}
		events = latest
	}
}

// regatherLimit bounds the gathers again of one reconcile: a steady stream of creates
// must not hold a translation back for long.
const regatherLimit = 2

// untilChanges is how long until a certificate the translation checked expires or
// becomes valid, so that its conditions change then without waiting for an event.
func untilChanges(validUntil, now time.Time) time.Duration {
	if validUntil.IsZero() {
		return 0
	}
	return max(validUntil.Sub(now), time.Millisecond)
}

// ownPorts reads Options.OwnPorts.
func (r *Reconciler) ownPorts() map[uint32]string {
	if r.opts.OwnPorts == nil {
		return nil
	}
	return r.opts.OwnPorts()
}

// ownPortsMoved asks for a translation at once when provisioning changed the own ports
// translated with (an Envoy started and took an admin port), so that a Backend aimed at
// the new port is refused within one reconcile rather than at the next change.
func (r *Reconciler) ownPortsMoved(translated map[uint32]string) time.Duration {
	if maps.Equal(translated, r.ownPorts()) {
		return 0
	}
	return time.Millisecond
}

// publish builds and publishes every translated Gateway and provisions its Envoys. It
// returns, per Gateway, why it could not be programmed; the previous snapshot stays
// published then (last known good).
func (r *Reconciler) publish(ctx context.Context, result *translate.Result, gateways map[string]*gwapiv1.Gateway) map[string]error {
	problems := map[string]error{}
	for _, desired := range result.Gateways {
		gw, held := r.stage(desired)
		gw = translate.WithCallers(gw, r.callers) // staging may bring back older listeners
		obj := gateways[gw.Name]
		if err := r.writePolicies(ctx, desired, gw, obj); err != nil {
			problems[gw.Name] = heldBack{err}
			continue
		}
		var content versionContent
		if held {
			content = r.heldContent(gw.Name) // before Publish: it reads the running version
		}
		staged := gw
		gw, probeKey, rejected := r.isolateNacks(gw, desired)
		refuseRoutes(&result.Statuses, gw.Name, rejected,
			"Envoy rejected the configuration of this route, so the route is left out (Envoy keeps what it ran for it before) and the rest of the Gateway is served")
		refuseClusters(&result.Statuses, staged, rejected,
			"Envoy rejected this Backend's new settings (Gateway %s, cluster %s), so it keeps what it ran before (nothing, for a new one) and the rest of the Gateway is served: %v")
		candidate := gw
		gw, leftOut, version, err := r.buildAndPublish(gw)
		refuseLeftOut(&result.Statuses, candidate, leftOut)
		if err == nil {
			if !held {
				// After Publish, off the way of the change: the refusals above touch
				// Programmed only, never the usability contentOf reads.
				content = contentOf(gw.Name, obj, *result, r.versions.latest(gw.Name))
			}
			r.versions.record(gw.Name, version, content)
			r.lastPublished[gw.Name] = gw
			r.published(gw.Name, probeKey, version, gw)
		}
		if err != nil {
			problems[gw.Name] = fmt.Errorf("the Envoy configuration could not be built: %w", err)
			r.log.Error(err, "publish", "gateway", gw.Name)
			continue
		}
		if r.opts.Provider == nil || obj == nil || !r.writes() {
			continue
		}
		addrs, err := r.opts.Provider.Ensure(ctx, infra.GatewayOf(obj))
		if err != nil {
			problems[gw.Name] = heldBack{fmt.Errorf("the Envoy fleet could not be provisioned: %w", err)}
			continue
		}
		if st := result.Statuses.Gateways[gw.Name]; st != nil {
			st.Addresses = addrs
		}
	}
	return problems
}

// writePolicies writes the Gateway's Envoy egress and ingress NetworkPolicies (on the
// elected replica only). The egress policy must allow the new endpoints before Envoy
// gets them, so failing to write it holds the new configuration back.
func (r *Reconciler) writePolicies(ctx context.Context, desired, gw ir.Gateway, obj *gwapiv1.Gateway) error {
	if !r.writes() {
		return nil
	}
	if err := r.widenEnvoyEgress(ctx, gw, obj); err != nil {
		r.log.Error(err, "envoy egress policy", "gateway", gw.Name)
		return fmt.Errorf("the Envoy egress NetworkPolicy could not be written, so the new configuration was not sent: %w", err)
	}
	if err := r.writeEnvoyIngress(ctx, desired, obj); err != nil {
		r.log.Error(err, "envoy ingress policy", "gateway", gw.Name)
	}
	return nil
}

// removeGone withdraws the snapshot and Envoys of Gateways no longer translated.
func (r *Reconciler) removeGone(ctx context.Context, result translate.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := map[string]types.NamespacedName{}
	for _, gw := range result.Gateways {
		now[gw.Name] = parseKey(gw.Name)
	}
	for key, name := range r.live {
		if _, ok := now[key]; ok {
			continue
		}
		r.opts.XDS.Remove(key)
		envoyconfig.Forget(key)
		r.versions.forget(key)
		delete(r.lastPublished, key)
		delete(r.holding, key)
		delete(r.bindRetries, key)
		delete(r.nacks, key)
		if !r.writes() {
			continue
		}
		if err := r.deleteEnvoyPolicies(ctx, name.Namespace, name.Name); err != nil {
			r.log.Error(err, "delete Envoy NetworkPolicies", "gateway", key)
			now[key] = name
		}
		if r.opts.Provider != nil {
			if err := r.opts.Provider.Delete(ctx, name.Namespace, name.Name); err != nil {
				r.log.Error(err, "delete Envoy fleet", "gateway", key)
				now[key] = name // try again next time
			}
		}
	}
	r.live = now
}

// emitWarnings turns new translation warnings into Warning Events; a warning that
// persists is not repeated, and one that went away may be emitted again if it returns.
func (r *Reconciler) emitWarnings(ws []translate.Warning) {
	current := make(map[translate.Warning]bool, len(ws))
	for _, w := range ws {
		current[w] = true
		if r.warned[w] || r.recorder == nil {
			continue
		}
		obj := &egressv1alpha1.Backend{}
		obj.Namespace, obj.Name = w.Namespace, w.Name
		obj.SetGroupVersionKind(egressv1alpha1.GroupVersion.WithKind(w.Kind))
		r.recorder.Event(obj, corev1.EventTypeWarning, w.Reason, w.Message)
	}
	r.warned = current
}

// outsideNames lists the names the DNS guard must resolve: FQDN Backends and
// ExternalName Services.
func outsideNames(res *egress.Resources) []string {
	set := map[string]bool{}
	for i := range res.Backends {
		for _, n := range backendOutsideName(res.Backends[i]) {
			set[n] = true
		}
	}
	xbackendNames(res, set)
	for _, s := range res.Services {
		if s.Spec.Type == corev1.ServiceTypeExternalName && s.Spec.ExternalName != "" {
			set[strings.TrimSuffix(strings.ToLower(s.Spec.ExternalName), ".")] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// backendOutsideName is the name an FQDN Backend has the DNS guard resolve.
func backendOutsideName(b *egressv1alpha1.Backend) []string {
	if f := b.Spec.Destination.FQDN; f != nil {
		return []string{strings.ToLower(f.Hostname)}
	}
	return nil
}

func gatewaysByKey(res *egress.Resources) map[string]*gwapiv1.Gateway {
	out := map[string]*gwapiv1.Gateway{}
	for i := range res.Gateways {
		out[client.ObjectKeyFromObject(&res.Gateways[i]).String()] = &res.Gateways[i]
	}
	return out
}

func backendUsable(st *egressv1alpha1.BackendStatus) bool {
	for _, t := range []string{egressv1alpha1.ConditionAccepted, egressv1alpha1.ConditionResolvedRefs} {
		if c := findCond(st.Conditions, t); c == nil || c.Status != "True" {
			return false
		}
	}
	return true
}

// soonest is the shortest positive duration, 0 when there is none.
func soonest(ds ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}
