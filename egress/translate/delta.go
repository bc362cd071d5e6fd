package translate

import (
	"cmp"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// A translation whose input differs from the last one's only in the specs of some
// Backends is a delta: it starts from the last Result and computes again only what
// those Backends are read by. One that differs only in HTTPRoutes is a route delta
// (route_delta.go), which computes again the changed routes and what the Backends they
// name are read by. The units (units.go, route_side.go) already keep every
// piece; what a delta saves is visiting the ten thousand pieces that did not change
// (checking each Backend unit, resolving each route's ref, filing each status) to put
// them back together. A delta:
//
//   - finds the changed Backends by their identity (UID and generation: a Backend's
//     translation reads its spec alone) against the last translation's, and requires
//     every other input to be the same objects (deltaID: UID and resourceVersion, or
//     generation for the kinds whose status is written), the same Options but the
//     clock (not gone back, still before the last Result's ValidUntil) and the same
//     DNS answers but for names only changed Backends read (answersMovedFor); a
//     Backend created, or deleted while no Gateway used it, is a changed one;
//   - translates the changed Backends (their units) and, on every Gateway, takes the
//     kept route side and resolves again only the backendRefs naming a changed
//     Backend, each of which must resolve as it did (the route side's early cutoff);
//   - replaces in the last Result's clusters and secrets of each Gateway those the
//     refs resolved to, and the changed Backends' statuses, Gateways and warnings;
//   - puts ValidUntil together from each Backend's own (a client certificate's expiry)
//     and that of the checks outside the Backends (finishDelta).
//
// Everything else (listeners, route tables, route and Gateway statuses) is computed as
// in any translation from kept units, so a delta's Result is the one a full translation
// would return. Whatever a delta cannot vouch for makes it give up, and the translation
// runs in full: a Backend deleted that a Gateway used, one that is not a unit (a Service
// destination) before or after, one a TLSRoute, TCPRoute or BackendTLSPolicy names, a
// secret a changed Backend stops or starts using, a route side that is not kept.
// TestBackendEditsTranslateAsCold compares deltas with cold translations;
// TestDeltaGivesUpWhereItMust checks each of these.

// deltaBase is what the last translation read and returned, for the next to start
// from. It is owned by one translation at a time (Cache.takeBase).
type deltaBase struct {
	// epoch is the translation that recorded or last advanced the base.
	epoch    uint64
	inputs   [numDeltaKinds][]deltaID
	backends map[types.NamespacedName]backendBaseEntry
	addrs    egress.Addresses
	opts     Options
	result   Result
	// others is when a certificate check outside the Backends changes verdict (zero:
	// never): a delta reads those inputs unchanged at a time before any such change,
	// so their verdicts, and this time, are the base's.
	others time.Time
}

// deltaID is an object's identity in the base: its UID and either its resourceVersion
// or, for the kinds whose status the manager writes, its generation (a status write
// must not make the next change a full translation: translation reads no status). A
// Gateway's and a GatewayClass's annotations carry settings translation reads, so their
// identity has them too.
type deltaID struct {
	uid        types.UID
	version    string
	generation int64
}

func idOf(kind int, o metav1.Object) deltaID {
	switch kind {
	case deltaHTTPRoutes, deltaTLSRoutes, deltaTCPRoutes, deltaBackendTLSPolicies, deltaXBackends:
		return deltaID{uid: o.GetUID(), generation: o.GetGeneration()}
	case deltaGateways, deltaGatewayClasses:
		return deltaID{uid: o.GetUID(), generation: o.GetGeneration(), version: annotationsKey(o.GetAnnotations())}
	}
	return deltaID{uid: o.GetUID(), version: o.GetResourceVersion()}
}

// annotationsKey is the annotations as one string, in key order.
func annotationsKey(a map[string]string) string {
	if len(a) == 0 {
		return ""
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(a)) {
		b.WriteString(strconv.Quote(k) + "=" + strconv.Quote(a[k]) + ";")
	}
	return b.String()
}

// versioned tells whether the identity pins the content.
func (id deltaID) versioned(kind int) bool {
	switch kind {
	case deltaHTTPRoutes, deltaTLSRoutes, deltaTCPRoutes, deltaBackendTLSPolicies, deltaXBackends, deltaGateways, deltaGatewayClasses:
		return id.uid != "" && id.generation > 0
	}
	return id.uid != "" && id.version != ""
}

// backendBaseEntry is a Backend as the base saw it.
type backendBaseEntry struct {
	uid        types.UID
	generation int64
	unit       bool      // its destination makes it a unit (units.go)
	until      time.Time // when one of its certificate checks changes verdict (zero: never)
	secrets    []string  // the secrets its clusters need, sorted
}

// deltaKinds are the inputs a delta requires unchanged, in egress.Resources' order.
const (
	deltaGatewayClasses = iota
	deltaGateways
	deltaHTTPRoutes
	deltaTLSRoutes
	deltaTCPRoutes
	deltaReferenceGrants
	deltaBackendTLSPolicies
	deltaServices
	deltaEndpointSlices
	deltaSecrets
	deltaConfigMaps
	deltaNamespaces
	deltaXBackends
	numDeltaKinds
)

// delta is one delta translation under way.
type delta struct {
	base    *deltaBase
	changed map[types.NamespacedName]bool
	// routes is set when HTTPRoutes changed (route_delta.go): changed are then the
	// Backends the changed routes touch.
	routes *routeDelta
	failed bool
}

// deltaInputs lists each kind's identities, in order; ok is false when an object has
// none (objects from files), so that no delta can be told from them.
func deltaInputs(res *egress.Resources) (ids [numDeltaKinds][]deltaID, ok bool) {
	for kind, n := range inputLens(res) {
		ids[kind] = make([]deltaID, 0, n)
	}
	ok = eachInput(res, func(kind int, o metav1.Object) bool {
		id := idOf(kind, o)
		ids[kind] = append(ids[kind], id)
		return id.versioned(kind)
	})
	return ids, ok
}

// inputLens is how many objects of each kind res holds.
func inputLens(res *egress.Resources) [numDeltaKinds]int {
	return [numDeltaKinds]int{
		deltaGatewayClasses: len(res.GatewayClasses), deltaGateways: len(res.Gateways),
		deltaHTTPRoutes: len(res.HTTPRoutes), deltaTLSRoutes: len(res.TLSRoutes), deltaTCPRoutes: len(res.TCPRoutes),
		deltaReferenceGrants: len(res.ReferenceGrants), deltaBackendTLSPolicies: len(res.BackendTLSPolicies),
		deltaServices: len(res.Services), deltaEndpointSlices: len(res.EndpointSlices), deltaSecrets: len(res.Secrets),
		deltaConfigMaps: len(res.ConfigMaps), deltaNamespaces: len(res.Namespaces), deltaXBackends: len(res.XBackends),
	}
}

// sameInputs tells whether res holds the objects the base read. They usually come in
// the same order (the manager hands out a kind's last list again while no event came
// for it), which is checked first; a kind listed again comes in the informer's order,
// which is a map's, so the identities of a kind out of place are then compared as sets,
// and the base takes that kind's new order: the next delta, given the same lists,
// compares them in order again. Only the kinds out of place are listed and sorted (a
// changed route among ten thousand is one kind, not the twenty thousand Secrets too).
// Translation does not depend on the order of its inputs (TestDeltaGivesUpWhereItMust
// checks a reordered input against a cold translation).
//
// The HTTPRoutes are left out: startDelta compares them itself (a route delta).
func sameInputs(res *egress.Resources, base *[numDeltaKinds][]deltaID) bool {
	lens, counts := inputLens(res), inputCounts(base)
	lens[deltaHTTPRoutes], counts[deltaHTTPRoutes] = 0, 0
	if lens != counts {
		return false
	}
	var at [numDeltaKinds]int
	var moved [numDeltaKinds][]deltaID // a kind's identities from its first out of place
	ok := eachInput(res, func(kind int, o metav1.Object) bool {
		if kind == deltaHTTPRoutes {
			return true
		}
		i := at[kind]
		at[kind]++
		id := idOf(kind, o)
		if moved[kind] == nil && id == base[kind][i] {
			return true
		}
		if moved[kind] == nil {
			moved[kind] = append(make([]deltaID, 0, len(base[kind])), base[kind][:i]...)
		}
		moved[kind] = append(moved[kind], id)
		return id.versioned(kind)
	})
	if !ok {
		return false
	}
	for kind, ids := range moved {
		if ids != nil && !sameIDs(ids, base[kind]) {
			return false
		}
	}
	for kind, ids := range moved {
		if ids != nil {
			base[kind] = ids
		}
	}
	return true
}

// sameIDs tells whether two lists of identities of the same length hold the same ones,
// in any order. A UID names one object, so a list holds each identity at most once.
func sameIDs(a, b []deltaID) bool {
	if slices.Equal(a, b) {
		return true
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, compareIDs)
	slices.SortFunc(b, compareIDs)
	return slices.Equal(a, b)
}

func compareIDs(a, b deltaID) int {
	return cmp.Or(cmp.Compare(a.uid, b.uid), cmp.Compare(a.version, b.version), cmp.Compare(a.generation, b.generation))
}

func inputCounts(ids *[numDeltaKinds][]deltaID) (n [numDeltaKinds]int) {
	for k := range ids {
		n[k] = len(ids[k])
	}
	return n
}

// eachInput calls f with every object a delta requires unchanged, kind by kind, until
// f returns false; it returns false then.
func eachInput(res *egress.Resources, f func(kind int, o metav1.Object) bool) bool {
	return eachObject(res.GatewayClasses, deltaGatewayClasses, f) && eachObject(res.Gateways, deltaGateways, f) &&
		eachPointed(res.HTTPRoutes, deltaHTTPRoutes, f) && eachObject(res.TLSRoutes, deltaTLSRoutes, f) &&
		eachObject(res.TCPRoutes, deltaTCPRoutes, f) && eachObject(res.ReferenceGrants, deltaReferenceGrants, f) &&
		eachObject(res.BackendTLSPolicies, deltaBackendTLSPolicies, f) && eachObject(res.Services, deltaServices, f) &&
		eachObject(res.EndpointSlices, deltaEndpointSlices, f) && eachObject(res.Secrets, deltaSecrets, f) &&
		eachObject(res.ConfigMaps, deltaConfigMaps, f) && eachObject(res.Namespaces, deltaNamespaces, f) &&
		eachObject(res.XBackends, deltaXBackends, f)
}

// eachObject calls f with a pointer to every element of objs until it returns false.
func eachObject[T any, P interface {
	*T
	metav1.Object
}](objs []T, kind int, f func(int, metav1.Object) bool) bool {
	for i := range objs {
		if !f(kind, P(&objs[i])) {
			return false
		}
	}
	return true
}

// eachPointed is eachObject of a kind held by pointer.
func eachPointed[P metav1.Object](objs []P, kind int, f func(int, metav1.Object) bool) bool {
	for _, o := range objs {
		if !f(kind, o) {
			return false
		}
	}
	return true
}

// recordBase keeps what this full translation read and returned for the next one to
// start from; nothing when an input has no identity.
func (t *translator) recordBase(res *egress.Resources) {
	inputs, ok := deltaInputs(res)
	if !ok || len(t.backends) != len(res.Backends) {
		return
	}
	backends := make(map[types.NamespacedName]backendBaseEntry, len(t.backends))
	for n, s := range t.backends {
		if s.b.UID == "" || s.b.Generation == 0 {
			return
		}
		backends[n] = baseEntry(s)
	}
	own := Result{Statuses: Statuses{Backends: maps.Clone(t.result.Statuses.Backends)},
		BackendGateways: maps.Clone(t.result.BackendGateways), Warnings: slices.Clone(t.result.Warnings)}
	t.cache.putBase(&deltaBase{epoch: t.epoch, inputs: inputs, backends: backends, addrs: t.addrs, opts: t.opts, result: t.baseResult(own), others: t.validUntil})
}

// startDelta returns the delta this translation is, or nil when it must run in full.
// It takes the base from the Cache; whoever ends the translation puts one back.
func (t *translator) startDelta(res *egress.Resources) *delta {
	base := t.cache.takeBase()
	if base == nil || !sameOptions(base.opts, t.opts) || !sameVerdicts(base, t.opts.Now) {
		return nil
	}
	routes, ok := routeIDs(res.HTTPRoutes, base.inputs[deltaHTTPRoutes])
	if !ok || !sameInputs(res, &base.inputs) {
		return nil
	}
	changed, ok := t.changedBackends(res, base)
	if !ok || !sameAnswers(base.addrs, t.addrs) && !t.answersMovedFor(changed, base.addrs) {
		return nil
	}
	if slices.Equal(routes, base.inputs[deltaHTTPRoutes]) {
		return t.backendDelta(base, changed, routes)
	}
	added, gone := routeChanges(routes, base.inputs[deltaHTTPRoutes])
	if len(added) == 0 && len(gone) == 0 { // the same routes in another order
		base.inputs[deltaHTTPRoutes] = routes
		return t.backendDelta(base, changed, routes)
	}
	touched, ok := t.touchedBackends(added, gone)
	if !ok || !t.deltaCanTouch(touched, base) {
		return nil
	}
	for n := range changed {
		touched[n] = true // a Backend and the route to it, applied together
	}
	return &delta{base: base, changed: touched, routes: &routeDelta{ids: routes}}
}

// routeIDs is kindIDs of the HTTPRoutes, or was itself when they are the routes it
// lists, in its order: a Backend's change leaves them so, and listing 10,000 identities
// anew was 0.38 MB of each change (BenchmarkOneBackendChanged). The base never
// modifies a list of identities; it only replaces it.
func routeIDs(routes []*gwapiv1.HTTPRoute, was []deltaID) ([]deltaID, bool) {
	if len(routes) == len(was) && len(was) > 0 && routesInOrder(routes, was) {
		return was, true
	}
	return kindIDs(routes, deltaHTTPRoutes)
}

// routesInOrder tells whether routes have the identities was lists, in its order.
func routesInOrder(routes []*gwapiv1.HTTPRoute, was []deltaID) bool {
	for i, r := range routes {
		if idOf(deltaHTTPRoutes, r) != was[i] {
			return false
		}
	}
	return true
}

// kindIDs lists the identities of one kind's objects; false when one has none.
func kindIDs[P metav1.Object](objs []P, kind int) ([]deltaID, bool) {
	ids := make([]deltaID, 0, len(objs))
	for _, o := range objs {
		id := idOf(kind, o)
		if !id.versioned(kind) {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// deltaCanTouch tells whether a route delta can take the touched Backends as changed:
// each that exists is a unit, as it was in the base if it was there, and only routes
// name it.
func (t *translator) deltaCanTouch(touched map[types.NamespacedName]bool, base *deltaBase) bool {
	for n := range touched {
		s := t.backends[n]
		if s == nil {
			delete(touched, n) // a ref to nothing: refused, and nothing to file
			continue
		}
		was, ok := base.backends[n]
		if ok && !was.unit || !unitDestination(destinationOf(s.b)) || t.namedBeyondRoutes(n) {
			return false
		}
	}
	return true
}

// changedBackends finds the Backends whose identity differs from the base's; false when
// one has no identity or cannot be taken as a delta.
//
// A Backend created (a name the base did not have, or a new UID under it) is a changed
// Backend that was not there: its unit is computed, the refs naming it, which resolved
// to nothing, are resolved again (the routes with such refs are attached again), and its
// status is filed. A Backend deleted is a changed Backend that is not there any more:
// the refs and existence checks naming it are looked at again, and its status goes;
// when a Gateway used it, the routes naming it are attached again and its clusters
// dropped (backendDelta).
func (t *translator) changedBackends(res *egress.Resources, base *deltaBase) (map[types.NamespacedName]bool, bool) {
	if len(t.backends) != len(res.Backends) {
		return nil, false
	}
	ids := t.keptIdentities(base)
	changed, kept := map[types.NamespacedName]bool{}, 0
	for i := range res.Backends {
		b := res.Backends[i]
		if b.UID == "" || b.Generation == 0 {
			return nil, false
		}
		if ids != nil && ids[i].uid == b.UID && ids[i].generation == b.Generation {
			kept++ // the base holds this identity under this name
			continue
		}
		n := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
		was, ok := base.backends[n]
		if ok {
			kept++
		}
		if ok && was.uid == b.UID && was.generation == b.Generation {
			continue
		}
		if ok && !was.unit || !unitDestination(destinationOf(b)) || t.namedBeyondRoutes(n) {
			return nil, false
		}
		changed[n] = true
	}
	if kept == len(base.backends) {
		return changed, true // every name of the base's is still there
	}
	for n, was := range base.backends {
		if t.backends[n] != nil {
			continue
		}
		if !was.unit || t.namedBeyondRoutes(n) {
			return nil, false
		}
		changed[n] = true
	}
	return changed, true
}

// backendDelta is the delta of changed Backends under the same routes. It is a route
// delta when a route's ref may now resolve otherwise than the kept route side says: a
// Backend deleted that a Gateway used (its clusters are dropped by their origin) or one
// created (a route may name it already; its clusters are added). A route delta attaches
// again the routes whose refs do not resolve as they did.
func (t *translator) backendDelta(base *deltaBase, changed map[types.NamespacedName]bool, routes []deltaID) *delta {
	for n := range changed {
		_, was := base.backends[n]
		if gone := t.backends[n] == nil; gone && len(base.result.BackendGateways[n.String()]) > 0 || !gone && !was {
			return &delta{base: base, changed: changed, routes: &routeDelta{ids: routes}}
		}
	}
	return &delta{base: base, changed: changed}
}

// answersMovedFor tells whether the DNS answers that differ from the base's are for
// names that only changed Backends read: no other Backend, no ExternalName Service and
// no XBackend. A Backend created, or given another hostname, brings its name's first
// answer (and takes its old name's away): the units that read the others are as they
// were.
func (t *translator) answersMovedFor(changed map[types.NamespacedName]bool, base egress.Addresses) bool {
	moved := movedNames(base, t.addrs)
	if len(moved) == 0 {
		return true
	}
	if len(t.xbackends) > 0 {
		return false
	}
	for n, s := range t.backends {
		if fqdn := s.b.Spec.Destination.FQDN; fqdn != nil && moved[strings.ToLower(fqdn.Hostname)] && !changed[n] {
			return false // the name destinationOf resolves
		}
	}
	for _, svc := range t.services {
		if svc.Spec.ExternalName != "" && moved[svc.Spec.ExternalName] {
			return false
		}
	}
	return true
}

// movedNames are the names whose answer one map has and the other has not, or says
// otherwise to translation.
func movedNames(a, b egress.Addresses) map[string]bool {
	moved := map[string]bool{}
	for name, ra := range a {
		if rb, ok := b[name]; !ok || !egress.SameForTranslation(ra, rb) {
			moved[name] = true
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			moved[name] = true
		}
	}
	return moved
}

// namedBeyondRoutes tells whether a BackendTLSPolicy, a TLSRoute or a TCPRoute names the
// Backend: what they make of it a delta does not compute again.
func (t *translator) namedBeyondRoutes(n types.NamespacedName) bool {
	for _, p := range t.policies {
		if p.Namespace == n.Namespace && targetsBackend(p, n.Name) {
			return true
		}
	}
	for _, r := range t.streamRoutes {
		for _, rule := range r.rules {
			for _, ref := range rule {
				if refNames(ref.BackendObjectReference, r.meta.Namespace, n) {
					return true
				}
			}
		}
	}
	return false
}

// refNames tells whether a backendRef written in namespace ns names n, of whatever
// kind (a delta gives up on less than it could, never on more).
func refNames(ref gwapiv1.BackendObjectReference, ns string, n types.NamespacedName) bool {
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	return ns == n.Namespace && string(ref.Name) == n.Name
}

// names tells whether a kept ref may name a changed Backend.
func (d *delta) names(seen *refSeen) bool {
	ns := seen.namespace
	if seen.ref.Namespace != nil {
		ns = string(*seen.ref.Namespace)
	}
	return d.changed[types.NamespacedName{Namespace: ns, Name: string(seen.ref.Name)}]
}

// sameVerdicts tells whether every certificate check of the base says the same at now:
// the clock has not gone back (the base's ValidUntil looks forward only), nor reached
// the base's ValidUntil, nor been switched on or off.
func sameVerdicts(base *deltaBase, now time.Time) bool {
	then, until := base.opts.Now, base.result.ValidUntil
	return now.IsZero() == then.IsZero() && !now.Before(then) && (until.IsZero() || now.Before(until))
}

// sameOptions compares the Options but the clock and the Cache.
func sameOptions(a, b Options) bool {
	return sameInterface(a.AddressPolicy, b.AddressPolicy) && slices.Equal(a.ClusterCIDRs, b.ClusterCIDRs) &&
		a.AllowLoopbackEndpoints == b.AllowLoopbackEndpoints && a.ControllerName == b.ControllerName &&
		slices.Equal(a.Unrestricted, b.Unrestricted) && maps.Equal(a.HeldPorts, b.HeldPorts) &&
		maps.Equal(a.OwnPorts, b.OwnPorts) && slices.Equal(a.OwnAddresses, b.OwnAddresses)
}

// sameInterface compares two interface values: comparable ones (a policy behind a
// pointer) by ==, others (a policy that is a list of prefixes) by content, without
// panicking (reflect.Value.Comparable looks into interfaces too); two funcs are never
// the same.
func sameInterface(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() {
		return false
	}
	if va.Comparable() && vb.Comparable() {
		return va.Equal(vb)
	}
	return reflect.DeepEqual(a, b)
}

// sameAnswers tells whether two answer maps say the same to translation: at once when
// they are the very same map (answers are never modified once handed to a
// translation), else name by name (the DNS guard hands out a new map when a refresh
// moves an answer's expiry, which translation does not read).
func sameAnswers(a, b egress.Addresses) bool {
	if reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
		return true
	}
	if len(a) != len(b) {
		return false
	}
	for name, ra := range a {
		if rb, ok := b[name]; !ok || !egress.SameForTranslation(ra, rb) {
			return false
		}
	}
	return true
}

// deltaClusters returns the Gateway's clusters and secrets: the base's with those this
// translation resolved put in their place. It fails the delta when one is not among
// the base's (the Gateway would gain it) or the Gateway is not in the base.
func (t *translator) deltaClusters(g *gatewayContext) ([]*ir.Cluster, []ir.Secret) {
	d := t.delta
	prev, ok := d.base.gateway(g.out.Name)
	if !ok {
		d.failed = true
		return nil, nil
	}
	if d.routes != nil {
		return t.routeDeltaClusters(g, prev)
	}
	clusters, ok := replaceByName(prev.Clusters, g.clusters, func(c *ir.Cluster) string { return c.Name }, func(c *ir.Cluster) *ir.Cluster { return c }, samePointer)
	if !ok {
		d.failed = true
	}
	secrets, ok := replaceByName(prev.Secrets, g.secrets, func(s ir.Secret) string { return s.Name }, func(s ir.Secret) ir.Secret { return s }, (*ir.Secret).Equal)
	if !ok {
		d.failed = true
	}
	return clusters, secrets
}

// replaceByName is sorted with the elements named in m replaced, in a copy; sorted
// itself when same (nil: never) finds every replacement equal to the element in place.
// A changed Backend's secrets are nearly always those it had: at 10,000 mutual-TLS
// Backends, copying the 20,000 secrets for nothing was 1.9 MB of each change, and the
// builder then compared them all again instead of seeing the same list at once.
// False when a name is not there.
func replaceByName[T, V any](sorted []T, m map[string]V, name func(T) string, value func(V) T, same func(a, b *T) bool) ([]T, bool) {
	out, copied := sorted, false
	for k, v := range m {
		i := sort.Search(len(out), func(i int) bool { return name(out[i]) >= k })
		if i == len(out) || name(out[i]) != k {
			return nil, false
		}
		next := value(v)
		if same != nil && same(&out[i], &next) {
			continue
		}
		if !copied {
			out, copied = slices.Clone(out), true
		}
		out[i] = next
	}
	return out, true
}

// gateway finds a Gateway of the base's Result by name.
func (b *deltaBase) gateway(name string) (ir.Gateway, bool) {
	gws := b.result.Gateways
	i := sort.Search(len(gws), func(i int) bool { return gws[i].Name >= name })
	if i == len(gws) || gws[i].Name != name {
		return ir.Gateway{}, false
	}
	return gws[i], true
}

// finishDeltaStatuses files the statuses a delta computes again (the changed Backends')
// over the base's, and takes the rest from the base: nothing else they are computed
// from changed. The base keeps a map of Backend statuses of its own: the caller may
// replace entries of a Result's (the manager marks them Programmed). The map of each
// Backend's Gateways nobody modifies: the Result shares the base's, and a delta that
// changes an entry copies it first (gatewaysOf).
func (t *translator) finishDeltaStatuses() {
	d, prev := t.delta, &t.delta.base.result
	prev.Warnings = slices.DeleteFunc(slices.Clone(prev.Warnings), func(w Warning) bool {
		return w.Kind == egressv1alpha1.BackendKind && d.changed[types.NamespacedName{Namespace: w.Namespace, Name: w.Name}]
	})
	gateways := gatewaysOf(prev.BackendGateways)
	for n := range d.changed {
		if t.backends[n] == nil { // deleted
			delete(prev.Statuses.Backends, n.String())
			gateways.set(n.String(), nil)
			continue
		}
		tb := t.translateBackend(t.backends[n])
		prev.Statuses.Backends[tb.key()] = t.backendStatusOf(n, tb)
		gateways.set(tb.key(), tb.gateways)
		if tb.ignoredMsg != "" {
			prev.Warnings = append(prev.Warnings, backendWarning(n, tb))
		}
	}
	prev.BackendGateways = gateways.done()
	sortWarnings(prev.Warnings)
	st := &t.result.Statuses
	st.Backends, st.BackendTLSPolicies, st.XBackends = maps.Clone(prev.Statuses.Backends), prev.Statuses.BackendTLSPolicies, prev.Statuses.XBackends
	t.result.BackendGateways, t.result.Warnings = prev.BackendGateways, prev.Warnings
}

// backendGateways is a map of each Backend's Gateways being patched: shared with the
// Results handed out until an entry really changes, then a copy. A changed Backend
// nearly always keeps its Gateways, and copying the map on every delta was 0.75 MB of
// each change at 10,000 Backends (BenchmarkOneBackendChanged).
type backendGateways struct {
	m      map[string][]string
	copied bool
}

func gatewaysOf(m map[string][]string) *backendGateways { return &backendGateways{m: m} }

// set makes key's Gateways gws (none: no entry), copying the map first unless they
// already are.
func (g *backendGateways) set(key string, gws []string) {
	old, had := g.m[key]
	if had == (len(gws) > 0) && slices.Equal(old, gws) {
		return
	}
	if !g.copied {
		g.m, g.copied = maps.Clone(g.m), true
		if g.m == nil {
			g.m = map[string][]string{}
		}
	}
	if len(gws) == 0 {
		delete(g.m, key)
	} else {
		g.m[key] = gws
	}
}

// done is the patched map; nil when it holds no entry.
func (g *backendGateways) done() map[string][]string {
	if len(g.m) == 0 {
		return nil
	}
	return g.m
}

// finishDelta ends a delta translation: its Result and the changed Backends'
// identities become the base. Its ValidUntil is put together as a full translation's
// is: the earliest change of verdict of the checks outside the Backends (the base's:
// their inputs are unchanged) and of every Backend's, the changed ones' as they were
// just checked. The walk over one entry per Backend is small next to the rest of a
// delta (BenchmarkDeltaOneBackendChanged at 10,000 took 6.6 ms with it, 5.6 ms without
// on a machine 15-20% faster).
func (t *translator) finishDelta() {
	d := t.delta
	for n := range d.changed {
		if s := t.backends[n]; s != nil {
			d.base.backends[n] = baseEntry(s)
		} else {
			delete(d.base.backends, n)
		}
	}
	if d.routes != nil {
		d.base.inputs[deltaHTTPRoutes] = d.routes.ids
	}
	d.base.addrs = t.addrs
	until := earlier(t.validUntil, d.base.others)
	for _, e := range d.base.backends {
		until = earlier(until, e.until)
	}
	t.result.ValidUntil = until
	d.base.result = t.baseResult(d.base.result)
	d.base.opts.Now = t.opts.Now
	d.base.epoch = t.epoch
	t.cache.putBase(d.base)
}

// baseResult is the Result as the base keeps it: this translation's, with the maps a
// delta patches in place (statuses), of its own.
func (t *translator) baseResult(own Result) Result {
	out := t.result
	out.Statuses.Backends, out.BackendGateways, out.Warnings = own.Statuses.Backends, own.BackendGateways, own.Warnings
	return out
}

// baseEntry is a Backend as a base keeps it.
func baseEntry(s *backendSlot) backendBaseEntry {
	e := backendBaseEntry{uid: s.b.UID, generation: s.b.Generation, unit: unitDestination(destinationOf(s.b)), until: s.until}
	if s.tb != nil {
		e.secrets = secretNames(s.tb)
	}
	return e
}

// secretNames are the names of the secrets a Backend's clusters need, sorted.
func secretNames(tb *translatedBackend) []string {
	var out []string
	for _, p := range tb.ports {
		for _, s := range p.secrets {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sameSecrets tells whether the changed Backends need the secrets they needed: the
// base's secrets of a Gateway are patched, never pruned, so one no longer needed would
// stay.
//
// A Backend created needed none: a Backend delta gives up if a Gateway gains its
// clusters (deltaClusters), and a route delta adds their secrets with them.
func (t *translator) sameSecrets() bool {
	for n := range t.delta.changed {
		s, now := t.backends[n]
		was, ok := t.delta.base.backends[n]
		if ok && now && !slices.Equal(secretNames(t.translateBackend(s)), was.secrets) {
			return false
		}
	}
	return true
}

// samePointer tells whether two pointers are one: an unchanged unit's cluster is the
// very cluster the base has.
func samePointer[T any](a, b **T) bool { return *a == *b }
