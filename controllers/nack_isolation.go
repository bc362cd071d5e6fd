package controllers

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds"
)

// Envoy may still reject (NACK) a configuration that translation and build let through.
// It then keeps running the version it last accepted, and every later change of every
// tenant of the Gateway would wait behind the one object. So when Envoy rejects a
// Gateway's configuration, the objects responsible are searched for as build isolation
// searches (build_isolation.go, readmit), except that the question "does this
// configuration work?" is asked of Envoy: a candidate is published, and Envoy's ACK or
// NACK of it, seen on a later reconcile (the xDS server wakes the reconciler), is the
// answer. Answers are remembered per candidate, so each reconcile replays the search
// from the start and goes one question further.
//
// The search's units are HTTPRoutes (their routes) and clusters (a Backend's or a
// Service's upstream settings): a tenant changes either. Probing never takes anything
// working away from anyone. A candidate leaves out only the changes made since the
// configuration every Envoy last accepted: a suspect HTTPRoute gets back the routes
// Envoy runs for it (none if it is new), a suspect cluster the settings Envoy runs for
// it (with the current endpoints, which the DNS guard vetted). Route deletions and
// secrets are never held back, and while Envoy rejects a candidate it keeps serving what
// it accepted last. The units found stay reverted and are marked (an HTTPRoute
// Accepted=False, a Backend Programmed=False/Rejected) with Envoy's message while they
// do not change; everyone else's changes are published at once.

// errVerdictPending stops a search whose next question Envoy has not answered yet.
var errVerdictPending = errors.New("waiting for Envoy's verdict")

// mutateForTest, set only by tests, changes the resources of a Gateway before they are
// published: tests inject a field Envoy rejects into one route, which no translation
// would produce. Nil in production, where nothing sets it.
var mutateForTest func(gateway string, res envoyconfig.Resources) envoyconfig.Resources

// nackSearch is one Gateway's NACK isolation state. Only the reconcile goroutine uses it.
type nackSearch struct {
	// acked is the configuration every Envoy ran last; nil before any.
	acked *ir.Gateway
	// base is the configuration the verdicts are about: the Gateway as staged.
	base ir.Gateway
	// verdicts are Envoy's answers per candidate (its excluded routes, keyOf): nil for
	// accepted, Envoy's message otherwise. Kept only once Envoy rejected something.
	verdicts map[string]error
	// pending is the candidate published last, until Envoy answers.
	pending *probe
	// culprits are the units left out, each with its content (unitsOf) when it was
	// found guilty: it stays out while that is the same.
	culprits map[string]culprit
}

type probe struct {
	key, version string
	gw           ir.Gateway
}

type culprit struct {
	unit any
	err  error
}

// clusterUnit prefixes a cluster's name to make its unit key; an HTTPRoute's key
// ("namespace/name") never holds a space.
const clusterUnit = "cluster "

// unitsOf is what the search may revert, by key: each HTTPRoute's routes, and each
// cluster's settings without its endpoints (which change with DNS answers and are never
// what Envoy rejects).
func unitsOf(gw ir.Gateway) map[string]any {
	out := map[string]any{}
	for name, rs := range routesByHTTPRoute(gw) {
		out[name] = rs
	}
	for _, c := range gw.Clusters {
		settings := *c // a copy: the IR's clusters are shared, never changed
		settings.Endpoints = nil
		out[clusterUnit+c.Name] = settings
	}
	return out
}

// isolateNacks returns the configuration to publish for a staged Gateway, the key of
// the candidate (for published), and the units left out (HTTPRoutes "namespace/name",
// clusters clusterUnit+name) with Envoy's message.
func (r *Reconciler) isolateNacks(gw, desired ir.Gateway) (ir.Gateway, string, map[string]error) {
	s := r.nacks[gw.Name]
	if s == nil {
		s = &nackSearch{culprits: map[string]culprit{}}
		r.nacks[gw.Name] = s
	}
	s.forgetGone(gw, desired)
	s.observe(r.opts.XDS.Status(gw.Name))
	if len(s.verdicts) > 0 && !reflect.DeepEqual(gw, s.base) {
		s.verdicts = nil // another configuration: the answers were about the old one
	}
	s.base = gw
	excluded := s.next(gw)
	return s.candidate(excluded), keyOf(excluded), s.why(excluded)
}

// forgetGone drops the culprits that are neither in the staged Gateway nor in the
// translated one: deleted objects. One only staging holds back is kept (next).
func (s *nackSearch) forgetGone(staged, desired ir.Gateway) {
	if len(s.culprits) == 0 {
		return
	}
	present := setOf(unitKeys(staged))
	for _, k := range unitKeys(desired) {
		present[k] = true
	}
	for name := range s.culprits {
		if !present[name] {
			delete(s.culprits, name)
		}
	}
}

// published records the candidate just published, to read Envoy's verdict on it later.
func (r *Reconciler) published(gateway, key, version string, gw ir.Gateway) {
	if s := r.nacks[gateway]; s != nil {
		s.pending = &probe{key: key, version: version, gw: gw}
	}
}

// probeAnswered asks for a reconcile at once when the candidate just published to ask
// Envoy a question is a version every Envoy already runs (an earlier candidate came out
// the same after build isolation): Envoy sends no new ACK then, and only a reconcile
// reads the verdict. A candidate whose answer is known (the search is over) asks
// nothing, so this never loops.
func (r *Reconciler) probeAnswered() time.Duration {
	for name, s := range r.nacks {
		p := s.pending
		if p == nil || len(s.verdicts) == 0 {
			continue
		}
		if _, known := s.verdicts[p.key]; !known && r.opts.XDS.Status(name).Version == p.version && r.envoysRunLatest(name) {
			return time.Millisecond
		}
	}
	return 0
}

// searching tells whether a NACK search of the Gateway is under way: staging must not
// hold its candidates back waiting for Envoys that rejected the last one.
func (r *Reconciler) searching(gateway string) bool {
	s := r.nacks[gateway]
	return s != nil && len(s.verdicts) > 0
}

// observe records Envoy's verdict on the pending candidate, once every Envoy has
// answered. A bind failure is no object's fault (listener_retry.go).
func (s *nackSearch) observe(st xds.GatewayStatus) {
	p := s.pending
	if p == nil {
		return
	}
	if st.Version != p.version {
		s.pending = nil // something else was published since (a resend)
		return
	}
	if nack, _ := st.Rejection(); nack != nil {
		if !bindFailure(nack.Message) {
			s.record(p.key, errors.New(nack.Message))
		}
		s.pending = nil
		return
	}
	if versions, all := st.Running(); all && len(versions) == 1 && versions[0] == st.Version {
		s.accepted(p)
	}
}

// accepted records that Envoy accepted a candidate. While a search runs, what Envoy
// accepted last stays the one from before it: the suspects must stay the same for the
// search to replay.
func (s *nackSearch) accepted(p *probe) {
	s.pending = nil
	if len(s.verdicts) > 0 {
		s.record(p.key, nil)
		return
	}
	acked := p.gw
	s.acked = &acked
}

func (s *nackSearch) record(key string, verdict error) {
	if s.verdicts == nil {
		s.verdicts = map[string]error{}
	}
	s.verdicts[key] = verdict
}

// next is the set of units to leave out of the candidate published now: the known
// culprits, plus whatever the search needs to ask Envoy about next; when the search is
// over, its culprits.
func (s *nackSearch) next(gw ir.Gateway) map[string]bool {
	known := map[string]bool{}
	if len(s.culprits) == 0 && len(s.verdicts) == 0 {
		return known // nothing rejected: no need to look at the units
	}
	units := unitsOf(gw)
	for name, c := range s.culprits {
		u, present := units[name]
		switch {
		case !present:
			// Staging held it back from this candidate (forgetGone drops deleted ones):
			// nothing to leave out now, and forgetting it would publish it again,
			// rejected, next time.
		case reflect.DeepEqual(u, c.unit):
			known[name] = true
		default:
			delete(s.culprits, name) // changed: innocent until Envoy says otherwise
		}
	}
	first, answered := s.verdicts[keyOf(known)]
	if !answered || first == nil {
		return known
	}
	suspects := s.suspects(units, known)
	all := union(known, setOf(suspects))
	if len(suspects) == 0 {
		return known // not a unit's fault: the rejection stays on the Gateway
	}
	if verdict, answered := s.verdicts[keyOf(all)]; !answered {
		return all
	} else if verdict != nil {
		return known
	}
	var asked map[string]bool
	ask := func(excluded map[string]bool) error {
		verdict, answered := s.verdicts[keyOf(excluded)]
		if !answered {
			asked = excluded
			return errVerdictPending
		}
		return verdict
	}
	why := map[string]error{}
	excluded := union(all, nil)
	if err := readmit(suspects, excluded, ask, why); err != nil {
		return asked
	}
	for name := range excluded {
		if _, ok := s.culprits[name]; !ok {
			if why[name] == nil {
				why[name] = first // fails only together with another route
			}
			s.culprits[name] = culprit{unit: units[name], err: why[name]}
		}
	}
	return excluded
}

// suspects are the units, sorted, that differ from those every Envoy ran last (all of
// them before Envoy accepted anything), known culprits aside.
func (s *nackSearch) suspects(units map[string]any, known map[string]bool) []string {
	var before map[string]any
	if s.acked != nil {
		before = unitsOf(*s.acked)
	}
	var out []string
	for name, u := range units {
		if !known[name] && !reflect.DeepEqual(u, before[name]) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// why is the reason of each culprit in excluded (probed suspects have none yet).
func (s *nackSearch) why(excluded map[string]bool) map[string]error {
	out := map[string]error{}
	for name := range excluded {
		if c, ok := s.culprits[name]; ok {
			out[name] = c.err
		}
	}
	return out
}

// candidate is base with the routes of the excluded HTTPRoutes replaced by those Envoy
// ran last, with the clusters those need, and the excluded clusters' settings by those
// Envoy ran last.
func (s *nackSearch) candidate(excluded map[string]bool) ir.Gateway {
	if len(excluded) == 0 {
		return s.base
	}
	var before ir.Gateway
	if s.acked != nil {
		before = *s.acked
	}
	out := withoutRoutes(s.base, excluded)
	for i := range out.Listeners {
		l := &out.Listeners[i]
		prev := findListener(before, l.Name)
		l.VirtualHosts = revertHosts(l.VirtualHosts, prev.VirtualHosts, excluded)
		for j := range l.Tenants {
			l.Tenants[j].VirtualHosts = revertHosts(l.Tenants[j].VirtualHosts, findTenant(prev, l.Tenants[j].Namespace).VirtualHosts, excluded)
		}
	}
	return revertClusters(withClusters(out.Listeners, out, before, routedClusters(out)), before, excluded)
}

// revertClusters gives the excluded clusters of gw the settings they have in before,
// keeping their current endpoints, with the secrets those settings name. An excluded
// cluster before lacks becomes a stub without settings or endpoints: its routes answer
// 503 (nothing answered there before either). Dropping it instead would drop its
// endpoints resource, a change Envoy never sees (it never subscribed to it), so Envoy
// would never seem to run the candidate.
func revertClusters(gw, before ir.Gateway, excluded map[string]bool) ir.Gateway {
	reverted := false
	for i, c := range gw.Clusters {
		if !excluded[clusterUnit+c.Name] {
			continue
		}
		if !reverted {
			gw.Clusters, reverted = slices.Clone(gw.Clusters), true
		}
		j := slices.IndexFunc(before.Clusters, func(b *ir.Cluster) bool { return b.Name == c.Name })
		if j < 0 {
			gw.Clusters[i] = &ir.Cluster{Name: c.Name, Origin: c.Origin, Protocol: c.Protocol}
			continue
		}
		old := *before.Clusters[j] // a copy: the IR's clusters are shared, never changed
		old.Endpoints = c.Endpoints
		gw.Clusters[i] = &old
		gw.Secrets = appendSecrets(gw.Secrets, before.Secrets, clusterSecrets(&old))
	}
	if reverted {
		gw.Secrets = slices.Clone(gw.Secrets) // usedSecrets deletes in place: base shares them
		slices.SortFunc(gw.Secrets, func(a, b ir.Secret) int { return strings.Compare(a.Name, b.Name) })
		gw.Secrets = usedSecrets(gw)
	}
	return gw
}

// revertHosts puts the routes of the excluded HTTPRoutes that before had back into the
// virtual hosts of the same name, each after the route it followed then.
func revertHosts(now, before []ir.VirtualHost, excluded map[string]bool) []ir.VirtualHost {
	for i := range now {
		if j := slices.IndexFunc(before, func(vh ir.VirtualHost) bool { return vh.Name == now[i].Name }); j >= 0 {
			now[i].Routes = revertRoutes(now[i].Routes, before[j].Routes, excluded)
		}
	}
	return now
}

// revertRoutes merges into kept (no excluded route) the excluded routes of before, each
// after the route it followed in before (at the end when that one is gone).
func revertRoutes(kept, before []ir.Route, excluded map[string]bool) []ir.Route {
	after := map[string][]ir.Route{} // by the name of the route before them; "" the first
	anchor := ""
	for _, rt := range before {
		if excluded[ir.HTTPRouteOf(rt.Name)] {
			after[anchor] = append(after[anchor], rt)
		} else {
			anchor = rt.Name
		}
	}
	out := slices.Clone(after[""])
	delete(after, "")
	for _, rt := range kept {
		out = append(out, rt)
		out = append(out, after[rt.Name]...)
		delete(after, rt.Name)
	}
	for _, name := range sortedKeys(after) {
		out = append(out, after[name]...)
	}
	return out
}

func findListener(gw ir.Gateway, name string) ir.Listener {
	if i := slices.IndexFunc(gw.Listeners, func(l ir.Listener) bool { return l.Name == name }); i >= 0 {
		return gw.Listeners[i]
	}
	return ir.Listener{}
}

func findTenant(l ir.Listener, namespace string) ir.Tenant {
	if i := slices.IndexFunc(l.Tenants, func(t ir.Tenant) bool { return t.Namespace == namespace }); i >= 0 {
		return l.Tenants[i]
	}
	return ir.Tenant{}
}

// routesByHTTPRoute lists each HTTPRoute's routes in every table, in table order.
func routesByHTTPRoute(gw ir.Gateway) map[string][]ir.Route {
	out := map[string][]ir.Route{}
	forEachRoute(gw, func(rt ir.Route) {
		name := ir.HTTPRouteOf(rt.Name)
		out[name] = append(out[name], rt)
	})
	return out
}

// keyOf names a set of units.
func keyOf(set map[string]bool) string {
	return strings.Join(sortedKeys(set), "\n")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func union(a, b map[string]bool) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// refuseClusters marks the Backend behind each cluster of gw in why
// Programmed=False/Rejected, the message being what (formatted with the Gateway, the
// cluster and the error); the condition's transition also makes a Warning event. A
// Service's cluster has no status of its own; Envoy's own log names it. Like
// refuseRoutes it writes into a copy of the map and of the entry: translation's map is
// shared with the remembered translation (translation_reuse.go).
func refuseClusters(st *translate.Statuses, gw ir.Gateway, why map[string]error, what string) {
	if len(why) == 0 { // nearly always: spares a unit name made for each cluster
		return
	}
	copied := false
	for _, c := range gw.Clusters {
		err := why[clusterUnit+c.Name]
		if err == nil || c.Origin.Kind != ir.OriginBackend {
			continue
		}
		key := c.Origin.Namespace + "/" + c.Origin.Name
		bs := st.Backends[key]
		if bs == nil {
			continue
		}
		refused := *bs
		refused.Conditions = slices.Clone(bs.Conditions)
		if cond := findCond(refused.Conditions, egressv1alpha1.ConditionProgrammed); cond != nil {
			cond.Status, cond.Reason = metav1.ConditionFalse, egressv1alpha1.ReasonRejected
			cond.Message = fmt.Sprintf(what, gw.Name, c.Name, err)
		}
		if !copied {
			st.Backends, copied = maps.Clone(st.Backends), true
		}
		st.Backends[key] = &refused
	}
}
