package controllers

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds"
)

// One tenant's object must never keep another tenant's change from reaching Envoy. The
// translator refuses every value it knows Envoy would refuse; should a Gateway's
// configuration still fail to build (or fail the proto constraints the xDS server
// checks), the units responsible (HTTPRoutes and clusters, as in nack_isolation.go) are
// found by halving (a build with a set of units left out succeeds or not), left out
// with a condition naming the error, and everything else is published.

// buildFunc builds a Gateway's resources: envoyconfig.Build, and the xDS server's checks
// once publishing found a resource invalid.
type buildFunc func(ir.Gateway) (envoyconfig.Resources, error)

// buildIsolating builds a Gateway's configuration, leaving out the units that make the
// build fail. It returns the resources, the Gateway as built, and why each unit left
// out (an HTTPRoute "namespace/name", a cluster clusterUnit+name) was; an error only
// when the failure is no unit's.
func buildIsolating(gw ir.Gateway, build buildFunc) (envoyconfig.Resources, ir.Gateway, map[string]error, error) {
	out, err := build(gw)
	if err == nil {
		return out, gw, nil, nil
	}
	routes := unitKeys(gw)
	builds := func(excluded map[string]bool) error {
		_, err := build(withoutUnits(gw, excluded))
		return err
	}
	if len(routes) == 0 || builds(setOf(routes)) != nil {
		return envoyconfig.Resources{}, gw, nil, err // not the routes' fault
	}
	excluded := setOf(routes)
	_ = readmit(routes, excluded, builds, nil) // builds never waits
	why := map[string]error{}
	for route := range excluded {
		alone := setOf(routes)
		delete(alone, route)
		why[route] = builds(alone)
		if why[route] == nil {
			why[route] = err // fails only together with another route
		}
	}
	kept := withoutUnits(gw, excluded)
	out, err = build(kept)
	return out, kept, why, err
}

// unitKeys lists, sorted, the units of gw: its HTTPRoutes and its clusters.
func unitKeys(gw ir.Gateway) []string {
	out := httpRoutesIn(gw)
	for _, c := range gw.Clusters {
		out = append(out, clusterUnit+c.Name)
	}
	sort.Strings(out)
	return out
}

// withoutUnits is gw without the routes of the excluded HTTPRoutes and without the
// excluded clusters (withoutClusters).
func withoutUnits(gw ir.Gateway, excluded map[string]bool) ir.Gateway {
	gone := map[string]bool{}
	for _, c := range gw.Clusters {
		if excluded[clusterUnit+c.Name] {
			gone[c.Name] = true
		}
	}
	return withoutClusters(withoutRoutes(gw, excluded), gone)
}

// unprogrammedBody answers for a route whose destination's cluster was left out.
const unprogrammedBody = ir.BackendUnavailable + ": Envoy could not take the configuration of this destination\n"

// withoutClusters is gw without the gone clusters and the secrets only they used: a
// route to one answers 503, a mirror to one is dropped, a CONNECT tunnel to one is
// refused. Routes, virtual hosts and listeners are copied where they change.
func withoutClusters(gw ir.Gateway, gone map[string]bool) ir.Gateway {
	if len(gone) == 0 {
		return gw
	}
	gw.Clusters = slices.DeleteFunc(slices.Clone(gw.Clusters), func(c *ir.Cluster) bool { return gone[c.Name] })
	hosts := func(vhs []ir.VirtualHost) []ir.VirtualHost {
		out := slices.Clone(vhs)
		for i := range out {
			out[i].Routes = slices.Clone(out[i].Routes)
			for j := range out[i].Routes {
				out[i].Routes[j] = withoutRouteClusters(out[i].Routes[j], gone)
			}
			out[i].Tunnels = slices.Clone(out[i].Tunnels)
			for j, t := range out[i].Tunnels {
				out[i].Tunnels[j].NoAddress = t.NoAddress || gone[t.Cluster]
			}
		}
		return out
	}
	gw.Listeners = slices.Clone(gw.Listeners)
	for i := range gw.Listeners {
		l := &gw.Listeners[i]
		l.VirtualHosts = hosts(l.VirtualHosts)
		l.Streams = withoutStreamClusters(l.Streams, gone)
		l.Tenants = slices.Clone(l.Tenants)
		for j := range l.Tenants {
			l.Tenants[j].VirtualHosts = hosts(l.Tenants[j].VirtualHosts)
			l.Tenants[j].Streams = withoutStreamClusters(l.Tenants[j].Streams, gone)
		}
	}
	gw.Secrets = usedSecrets(ir.Gateway{Listeners: gw.Listeners, Clusters: gw.Clusters, Secrets: slices.Clone(gw.Secrets)})
	return gw
}

// withoutStreamClusters moves the share of connections that stream routes send to gone
// clusters to their invalid share: those connections are closed.
func withoutStreamClusters(routes []ir.StreamRoute, gone map[string]bool) []ir.StreamRoute {
	out := slices.Clone(routes)
	for i := range out {
		r := &out[i]
		if !slices.ContainsFunc(r.Backends, func(b ir.WeightedCluster) bool { return gone[b.Cluster] }) {
			continue
		}
		var kept []ir.WeightedCluster
		for _, b := range r.Backends {
			if gone[b.Cluster] {
				r.InvalidWeight += b.Weight
			} else {
				kept = append(kept, b)
			}
		}
		r.Backends = kept
	}
	return out
}

// withoutRouteClusters makes a route that sends to a gone cluster answer 503 instead,
// and drops its mirrors to gone clusters.
func withoutRouteClusters(rt ir.Route, gone map[string]bool) ir.Route {
	if slices.ContainsFunc(rt.Backends, func(b ir.WeightedCluster) bool { return gone[b.Cluster] }) {
		rt.Backends = nil
		rt.DirectResponse = &ir.DirectResponse{StatusCode: 503, Body: unprogrammedBody}
	}
	if slices.ContainsFunc(rt.Mirrors, func(m ir.Mirror) bool { return gone[m.Cluster] }) {
		rt.Mirrors = slices.DeleteFunc(slices.Clone(rt.Mirrors), func(m ir.Mirror) bool { return gone[m.Cluster] })
	}
	return rt
}

// readmit takes routes back out of excluded, half by half, as long as the build still
// succeeds; what stays excluded makes it fail. It costs about two builds per culprit per
// halving, not one per route. An error of builds wrapping errVerdictPending stops the
// search and is returned (NACK isolation asks Envoy, whose verdict comes later); why, when
// set, gets the error of each route that failed when readmitted alone.
func readmit(routes []string, excluded map[string]bool, builds func(map[string]bool) error, why map[string]error) error {
	if len(routes) == 0 {
		return nil
	}
	try := make(map[string]bool, len(excluded))
	for r := range excluded {
		try[r] = true
	}
	for _, r := range routes {
		delete(try, r)
	}
	err := builds(try)
	switch {
	case errors.Is(err, errVerdictPending):
		return err
	case err == nil:
		for _, r := range routes {
			delete(excluded, r)
		}
		return nil
	case len(routes) == 1:
		if why != nil {
			why[routes[0]] = err
		}
		return nil
	}
	half := len(routes) / 2
	if err := readmit(routes[:half], excluded, builds, why); err != nil {
		return err
	}
	return readmit(routes[half:], excluded, builds, why)
}

// httpRoutesIn lists, sorted, the HTTPRoutes ("namespace/name") of every route table.
func httpRoutesIn(gw ir.Gateway) []string {
	set := map[string]bool{}
	forEachRoute(gw, func(r ir.Route) { set[ir.HTTPRouteOf(r.Name)] = true })
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// withoutRoutes is gw with the routes of the excluded HTTPRoutes taken out of every
// table (listeners and virtual hosts are copied, routes shared). A virtual host without
// an excluded route keeps its very list of routes, which the build compares with the
// last in one step (egress/envoyconfig/ir_equal.go) instead of route by route.
func withoutRoutes(gw ir.Gateway, excluded map[string]bool) ir.Gateway {
	isExcluded := func(r ir.Route) bool { return excluded[ir.HTTPRouteOf(r.Name)] }
	keep := func(vhs []ir.VirtualHost) []ir.VirtualHost {
		out := make([]ir.VirtualHost, len(vhs))
		for i, vh := range vhs {
			out[i] = vh
			if !slices.ContainsFunc(vh.Routes, isExcluded) {
				continue
			}
			vh.Routes = nil
			for _, r := range vhs[i].Routes {
				if !isExcluded(r) {
					vh.Routes = append(vh.Routes, r)
				}
			}
			out[i] = vh
		}
		return out
	}
	ls := make([]ir.Listener, len(gw.Listeners))
	for i, l := range gw.Listeners {
		l.VirtualHosts = keep(l.VirtualHosts)
		tenants := make([]ir.Tenant, len(l.Tenants))
		for j, t := range l.Tenants {
			tenants[j] = ir.Tenant{Namespace: t.Namespace, VirtualHosts: keep(t.VirtualHosts)}
		}
		l.Tenants = tenants
		ls[i] = l
	}
	gw.Listeners = ls
	return gw
}

func setOf(items []string) map[string]bool {
	out := make(map[string]bool, len(items))
	for _, it := range items {
		out[it] = true
	}
	return out
}

// refuseLeftOut marks each route left out of a Gateway's configuration Accepted=False on
// that Gateway, and the Backend of each cluster left out Programmed=False, with the
// build's error. gw is the Gateway before units were left out.
func refuseLeftOut(st *translate.Statuses, gw ir.Gateway, why map[string]error) {
	refuseRoutes(st, gw.Name, why, "Envoy's configuration for this route could not be built, so the route is left out and the rest of the Gateway is served")
	refuseClusters(st, gw, why, "Envoy's configuration for this Backend could not be built (Gateway %s, cluster %s), so it is left out and the rest of the Gateway is served: %v")
}

// buildAndPublish builds and publishes a Gateway's configuration, leaving out what
// fails the build or the xDS server's proto-constraint checks. It returns the Gateway
// as published, the units left out, and the version.
func (r *Reconciler) buildAndPublish(gw ir.Gateway) (ir.Gateway, map[string]error, string, error) {
	build := func(g ir.Gateway) (envoyconfig.Resources, error) {
		out, err := envoyconfig.Build(g, r.opts.Envoy)
		if err == nil && mutateForTest != nil {
			out = mutateForTest(g.Name, out)
		}
		return out, err
	}
	out, built, leftOut, err := buildIsolating(gw, build)
	if err != nil {
		return built, leftOut, "", err
	}
	version, _, err := r.opts.XDS.Publish(gw.Name, out)
	if !errors.Is(err, xds.ErrInvalidResource) {
		return built, leftOut, version, err
	}
	// Checking every resource costs a pass the xDS server avoids for resources it saw
	// before: only now that one fails is every build checked.
	checked := func(g ir.Gateway) (envoyconfig.Resources, error) {
		out, err := build(g)
		if err == nil {
			err = xds.Validate(out)
		}
		return out, err
	}
	out, built, leftOut, err = buildIsolating(gw, checked)
	if err == nil {
		version, _, err = r.opts.XDS.Publish(gw.Name, out)
	}
	return built, leftOut, version, err
}

// refuseRoutes marks each route of why Accepted=False on the Gateway, the message being
// what happened followed by the route's error. It writes into a copy of the map and of
// the route's entry: translation's route statuses are shared with the remembered
// translation (translation_reuse.go), which must keep saying what translation said.
// Copying here, where a route is seldom refused, spares copying the map of every
// route's statuses on every translation (markable).
func refuseRoutes(st *translate.Statuses, gateway string, why map[string]error, what string) {
	if len(why) == 0 {
		return
	}
	st.HTTPRoutes = maps.Clone(st.HTTPRoutes)
	gwNS, gwName, _ := strings.Cut(gateway, "/")
	for route, err := range why {
		routeNS, _, _ := strings.Cut(route, "/")
		parents := slices.Clone(st.HTTPRoutes[route])
		if parents == nil {
			continue
		}
		st.HTTPRoutes[route] = parents
		for i := range parents {
			ref := parents[i].ParentRef
			ns := routeNS
			if ref.Namespace != nil {
				ns = string(*ref.Namespace)
			}
			if ns != gwNS || string(ref.Name) != gwName {
				continue
			}
			parents[i].Conditions = setAccepted(slices.Clone(parents[i].Conditions), fmt.Sprintf("%s: %v", what, err))
		}
	}
}

func setAccepted(conds []metav1.Condition, msg string) []metav1.Condition {
	for i := range conds {
		if conds[i].Type == string(gwapiv1.RouteConditionAccepted) {
			conds[i].Status, conds[i].Reason, conds[i].Message = metav1.ConditionFalse, string(gwapiv1.RouteReasonUnsupportedValue), msg
		}
	}
	return conds
}
