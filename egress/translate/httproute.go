package translate

import (
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// attachRoutes attaches every HTTPRoute whose parentRefs name this Gateway and records
// one RouteParentStatus per such parentRef.
func (t *translator) attachRoutes(g *gatewayContext) {
	choices := listenerChoices{}
	for _, r := range t.routes {
		if namesGateway(r, g.gw) {
			t.attachOneRoute(g, choices, r)
		}
	}
}

// namesGateway tells whether one of the route's parentRefs names gw.
func namesGateway(r *gwapiv1.HTTPRoute, gw *gwapiv1.Gateway) bool {
	return slices.ContainsFunc(r.Spec.ParentRefs, func(ref gwapiv1.ParentReference) bool { return refersToGateway(ref, r.Namespace, gw) })
}

// attachOneRoute attaches a route that names the Gateway, once per parentRef naming it,
// in the span of the route side being recorded.
func (t *translator) attachOneRoute(g *gatewayContext, choices listenerChoices, r *gwapiv1.HTTPRoute) {
	key := nameOf(r).String()
	g.record.startRoute()
	for _, ref := range r.Spec.ParentRefs {
		if refersToGateway(ref, r.Namespace, g.gw) {
			t.addParentStatus(g, key, t.attachRoute(g, choices, r, key, ref))
		}
	}
	g.record.endRoute()
}

func refersToGateway(ref gwapiv1.ParentReference, routeNS string, gw *gwapiv1.Gateway) bool {
	group, kind, ns := gwapiv1.GroupName, "Gateway", routeNS
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	return group == gwapiv1.GroupName && kind == "Gateway" && ns == gw.Namespace && string(ref.Name) == gw.Name
}

// attachRoute attaches one route to the listeners its parentRef selects and returns the
// parent status. Routes are translated once per parent: a rule's backends are shared.
// key is the route's "namespace/name".
func (t *translator) attachRoute(g *gatewayContext, choices listenerChoices, r *gwapiv1.HTTPRoute, key string, ref gwapiv1.ParentReference) gwapiv1.RouteParentStatus {
	st := gwapiv1.RouteParentStatus{ParentRef: ref, ControllerName: gwapiv1.GatewayController(t.opts.ControllerName)}
	gen := r.Generation
	reject := func(reason gwapiv1.RouteConditionReason, msg string) gwapiv1.RouteParentStatus {
		st.Conditions = []metav1.Condition{condition(string(gwapiv1.RouteConditionAccepted), false, string(reason), msg, gen)}
		return st
	}
	rejectUnattached := func(reason gwapiv1.RouteConditionReason, msg string) gwapiv1.RouteParentStatus {
		st = reject(reason, msg)
		st.Conditions = append(st.Conditions, t.unattachedRefStatus(g, r).condition(gen))
		return st
	}
	selected, allowed := t.chooseListeners(g, choices, ref, r.Namespace, httpRouteKind.Kind)
	if len(selected) == 0 {
		return rejectUnattached(gwapiv1.RouteReasonNoMatchingParent, "no valid listener of the Gateway matches parentRef's sectionName/port")
	}
	if len(allowed) == 0 {
		return rejectUnattached(gwapiv1.RouteReasonNotAllowedByListeners, "the selected listeners do not allow routes from namespace "+r.Namespace)
	}
	rules, resolved, err := t.buildRules(g, r, key)
	if err != nil {
		return reject(gwapiv1.RouteReasonUnsupportedValue, err.Error())
	}
	attached := false
	for _, l := range allowed {
		domains := intersectHostnames(hostnameOf(l.spec), hostnameStrings(r.Spec.Hostnames))
		if len(domains) == 0 {
			continue
		}
		attached = true
		g.join(l, domains, rules)
	}
	if !attached {
		return reject(gwapiv1.RouteReasonNoMatchingListenerHostname, "no hostname of the route matches a hostname of the selected listeners")
	}
	st.Conditions = []metav1.Condition{
		condition(string(gwapiv1.RouteConditionAccepted), true, string(gwapiv1.RouteReasonAccepted), "route accepted", gen),
		resolved.condition(gen),
	}
	return st
}

// selectListeners returns the valid listeners a parentRef names by sectionName and port.
func selectListeners(g *gatewayContext, ref gwapiv1.ParentReference) []*listenerContext {
	var out []*listenerContext
	for _, l := range g.listeners {
		if !l.valid() || (ref.SectionName != nil && *ref.SectionName != l.spec.Name) || (ref.Port != nil && *ref.Port != l.spec.Port) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// allowingListeners keeps the listeners whose allowedRoutes admit the route's namespace
// and kind.
func (t *translator) allowingListeners(ls []*listenerContext, ns string, kind gwapiv1.Kind) []*listenerContext {
	var out []*listenerContext
	for _, l := range ls {
		if l.carries(kind) && t.namespaceAllowed(l, ns) {
			out = append(out, l)
		}
	}
	return out
}

func (t *translator) namespaceAllowed(l *listenerContext, ns string) bool {
	from := gwapiv1.NamespacesFromSame
	var selector *metav1.LabelSelector
	if ar := l.spec.AllowedRoutes; ar != nil && ar.Namespaces != nil {
		if ar.Namespaces.From != nil {
			from = *ar.Namespaces.From
		}
		selector = ar.Namespaces.Selector
	}
	switch from {
	case gwapiv1.NamespacesFromAll:
		return true
	case gwapiv1.NamespacesFromSelector:
		sel, err := metav1.LabelSelectorAsSelector(selector)
		return err == nil && selector != nil && sel.Matches(labels.Set(t.namespaceLabel[ns]))
	}
	return ns == l.gatewayNamespace
}

func hostnameStrings(hs []gwapiv1.Hostname) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = string(h)
	}
	return out
}

// buildRules turns the route's rules into IR routes (one per match) and reports how its
// backendRefs resolved. An unsupported filter refuses the whole route. routeName is the
// route's "namespace/name".
func (t *translator) buildRules(g *gatewayContext, r *gwapiv1.HTTPRoute, routeName string) ([]routeEntry, refStatus, error) {
	var entries []routeEntry
	var resolved refStatus
	for i, rule := range r.Spec.Rules {
		base := ir.Route{}
		if err := applyFilters(&base, rule.Filters); err != nil {
			return nil, resolved, fmt.Errorf("rules[%d].%v", i, err)
		}
		if err := checkMatches(rule.Matches); err != nil {
			return nil, resolved, fmt.Errorf("rules[%d].%v", i, err)
		}
		timeouts, err := convertTimeouts(rule.Timeouts)
		if err != nil {
			return nil, resolved, fmt.Errorf("rules[%d].%v", i, err)
		}
		base.Timeouts = timeouts
		if base.Retry, err = convertRetry(rule.Retry); err != nil {
			return nil, resolved, fmt.Errorf("rules[%d].%v", i, err)
		}
		if err := t.routeBackends(g, r, i, rule, &base, &resolved); err != nil {
			return nil, resolved, err
		}
		if base.Redirect == nil {
			if base.Mirrors, err = t.mirrors(g, r, i, rule.Filters, &resolved); err != nil {
				return nil, resolved, err
			}
		}
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gwapiv1.HTTPRouteMatch{{}}
		}
		for j, m := range matches {
			route := base
			route.Name = routeName + "/rule/" + strconv.Itoa(i) + "/match/" + strconv.Itoa(j)
			route.Match = convertMatch(m)
			entries = append(entries, routeEntry{route: originOf(r), rule: i, match: j, ir: route})
		}
	}
	return entries, resolved, nil
}

// addParentStatus appends a parent status for the route named key ("namespace/name").
func (t *translator) addParentStatus(g *gatewayContext, key string, st gwapiv1.RouteParentStatus) {
	g.record.noteStatus(key, st)
	m := t.ownRouteStatuses()
	m[key] = append(m[key], st)
}

// join attaches a route's entries to a listener under domains, and notes it for the
// route side being recorded.
func (g *gatewayContext) join(l *listenerContext, domains []string, entries []routeEntry) {
	l.attachedRoutes++
	g.addRoutes(l, domains, entries)
	if g.record != nil {
		g.record.noteJoin(slices.Index(g.listeners, l), domains, entries)
	}
}

// addRoutes files the route entries under each domain of the listener's Envoy port, by
// reference: a route's entries are made once and every table that serves them (each
// domain's, each tenant's) points to them instead of holding a copy of its own.
func (g *gatewayContext) addRoutes(l *listenerContext, domains []string, entries []routeEntry) {
	port := l.envoyPort
	if g.hosts[port] == nil {
		g.hosts[port] = make(map[string][]*routeEntry, g.refs)
	}
	entries = withRedirectPort(entries, l.spec.Port)
	for _, d := range domains {
		for i := range entries {
			g.hosts[port][d] = append(g.hosts[port][d], &entries[i])
		}
	}
}

// withRedirectPort gives redirects that name neither scheme nor port the listener's public
// port, as Gateway API requires; only the translator knows it (Envoy binds port+10000
// below 1024 and strips the Host port). Entries without such a redirect are returned as
// they are, not copied: callers only append them.
func withRedirectPort(entries []routeEntry, port gwapiv1.PortNumber) []routeEntry {
	if !slices.ContainsFunc(entries, needsRedirectPort) {
		return entries
	}
	out := make([]routeEntry, len(entries))
	for i, e := range entries {
		if needsRedirectPort(e) {
			fixed := *e.ir.Redirect
			fixed.Port = uint32(port)
			e.ir.Redirect = &fixed
		}
		out[i] = e
	}
	return out
}

func needsRedirectPort(e routeEntry) bool {
	r := e.ir.Redirect
	return r != nil && r.Scheme == "" && r.Port == 0
}
