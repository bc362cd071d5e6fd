package controllers

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// One tenant's route must never keep another tenant's change from reaching Envoy. The
// translator refuses every value it knows Envoy would refuse; should a Gateway's
// configuration still fail to build, the HTTPRoutes responsible are found by halving
// (a build with a set of routes left out succeeds or not), left out with a condition
// naming the error, and everything else is published.

// buildIsolating builds a Gateway's configuration, leaving out the HTTPRoutes that make
// the build fail. It returns the resources, the Gateway as built, and why each route
// left out ("namespace/name") was; an error only when the failure is not the routes'.
func buildIsolating(gw ir.Gateway, opts envoyconfig.Options) (envoyconfig.Resources, ir.Gateway, map[string]error, error) {
	out, err := envoyconfig.Build(gw, opts)
	if err == nil {
		return out, gw, nil, nil
	}
	routes := httpRoutesIn(gw)
	builds := func(excluded map[string]bool) error {
		_, err := envoyconfig.Build(withoutRoutes(gw, excluded), opts)
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
	kept := withoutRoutes(gw, excluded)
	out, err = envoyconfig.Build(kept, opts)
	return out, kept, why, err
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
// table (listeners and virtual hosts are copied, routes shared).
func withoutRoutes(gw ir.Gateway, excluded map[string]bool) ir.Gateway {
	keep := func(vhs []ir.VirtualHost) []ir.VirtualHost {
		out := make([]ir.VirtualHost, len(vhs))
		for i, vh := range vhs {
			vh.Routes = nil
			for _, r := range vhs[i].Routes {
				if !excluded[ir.HTTPRouteOf(r.Name)] {
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

// refuseLeftOutRoutes marks each route left out of a Gateway's configuration
// Accepted=False on that Gateway, with the build's error.
func refuseLeftOutRoutes(st translate.Statuses, gateway string, why map[string]error) {
	refuseRoutes(st, gateway, why, "Envoy's configuration for this route could not be built, so the route is left out and the rest of the Gateway is served")
}

// refuseRoutes marks each route of why Accepted=False on the Gateway, the message being
// what happened followed by the route's error.
func refuseRoutes(st translate.Statuses, gateway string, why map[string]error, what string) {
	gwNS, gwName, _ := strings.Cut(gateway, "/")
	for route, err := range why {
		routeNS, _, _ := strings.Cut(route, "/")
		parents := st.HTTPRoutes[route]
		for i := range parents {
			ref := parents[i].ParentRef
			ns := routeNS
			if ref.Namespace != nil {
				ns = string(*ref.Namespace)
			}
			if ns != gwNS || string(ref.Name) != gwName {
				continue
			}
			parents[i].Conditions = setAccepted(parents[i].Conditions, fmt.Sprintf("%s: %v", what, err))
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
