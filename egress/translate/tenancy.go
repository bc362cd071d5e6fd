package translate

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// Tenant isolation (the README's "Tenancy"). On a Gateway that isolates tenants, a caller
// is served only the HTTPRoutes of its own namespace and the HTTPRoutes whose namespace
// admits it with a ReferenceGrant from Pods of the caller's namespace:
//
//	kind: ReferenceGrant
//	metadata: {namespace: team-b}          # the route's namespace decides
//	spec:
//	  from: [{group: "", kind: Pod, namespace: team-a}]
//	  to:   [{group: gateway.networking.k8s.io, kind: HTTPRoute}]   # or one route by name
//
// Two namespaces may then route the same hostname, each to its own Backend, and neither
// can capture the other's callers. Isolation is on unless the Gateway (or, for all its
// Gateways, the GatewayClass) says otherwise with the TenantIsolationAnnotation.
const (
	// TenantIsolationAnnotation, "on" or "off", turns isolation on or off for a Gateway;
	// on a GatewayClass it sets the default of its Gateways.
	TenantIsolationAnnotation = "portcullis.io/tenant-isolation"
	// AccessLogAnnotation "off" on a Gateway turns its audit log off.
	AccessLogAnnotation = "portcullis.io/access-log"
	// ConditionTenantIsolation is the Gateway condition that says whether and how the
	// Gateway isolates tenants, and which namespaces each listener serves.
	ConditionTenantIsolation = "portcullis.io/TenantIsolation"
	// Reasons of ConditionTenantIsolation.
	ReasonIsolated        = "Isolated"
	ReasonIsolationOff    = "Disabled"
	ReasonInvalidSetting  = "InvalidSetting"
	callerGrantKind       = "Pod"
	maxNamespacesInStatus = 20
)

// isolation decides whether a Gateway isolates tenants: its own annotation, else its
// class's, else on. A value other than "on" or "off" keeps isolation on (closed) and is
// reported, naming the annotation and where it was found.
func isolation(gw *gwapiv1.Gateway, class *gwapiv1.GatewayClass) (on bool, problem string) {
	for _, src := range []struct {
		what string
		ann  map[string]string
	}{{"Gateway", gw.Annotations}, {"GatewayClass", classAnnotations(class)}} {
		v, set := src.ann[TenantIsolationAnnotation]
		if !set {
			continue
		}
		switch v {
		case "on":
			return true, ""
		case "off":
			return false, ""
		}
		return true, fmt.Sprintf("%s annotation %s is %q; use \"on\" or \"off\" (isolation stays on)", src.what, TenantIsolationAnnotation, v)
	}
	return true, ""
}

func classAnnotations(c *gwapiv1.GatewayClass) map[string]string {
	if c == nil {
		return nil
	}
	return c.Annotations
}

// accessLogOn tells whether a Gateway writes the audit log: yes unless it says "off".
func accessLogOn(gw *gwapiv1.Gateway) bool { return gw.Annotations[AccessLogAnnotation] != "off" }

// tenantTables builds, for one Envoy port, the route table of every caller namespace:
// the routes of that namespace and those admitting it, per Host domain, in the same
// precedence as the shared table. On a forward proxy (tunnels not nil) each table also
// holds the tunnels its namespace may open, and a namespace with tunnels but no route
// gets a table too.
//
// Each tenant's table keeps the hosts of its prior table that are as they were
// (host_reuse.go); the entries behind each table are returned beside the tenants.
func (t *translator) tenantTables(g *gatewayContext, port uint32, hosts map[string][]*routeEntry, tunnels []tunnelTarget, prior *httpTables) ([]ir.Tenant, []map[string][]*routeEntry) {
	byNS := map[string]map[string][]*routeEntry{}
	for d, entries := range hosts {
		for _, e := range entries {
			for _, ns := range t.routeCallers(e.route.name) {
				if byNS[ns] == nil {
					byNS[ns] = map[string][]*routeEntry{}
				}
				byNS[ns][d] = append(byNS[ns][d], e)
			}
		}
	}
	for _, tt := range tunnels {
		for _, ns := range tt.callers {
			if byNS[ns] == nil {
				byNS[ns] = map[string][]*routeEntry{}
			}
		}
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	out, entries := make([]ir.Tenant, 0, len(namespaces)), make([]map[string][]*routeEntry, 0, len(namespaces))
	next := 0
	for _, ns := range namespaces {
		was := prior.tenantPrior(&next, ns)
		table := hostTable{entries: byNS[ns]}
		if tunnels != nil {
			table = t.proxyVirtualHosts(g, port, byNS[ns], tunnelTable(tunnels, ns), was)
		} else {
			table.vhosts = virtualHosts(port, byNS[ns], was)
		}
		out, entries = append(out, ir.Tenant{Namespace: ns, VirtualHosts: table.vhosts}), append(entries, table.entries)
	}
	return out, entries
}

// routeCallers lists the caller namespaces a route serves: its own, then those its
// namespace admits by ReferenceGrant, sorted. The list is the same for every route of a
// namespace unless one of its grants names routes one by one, so it is remembered per
// namespace, and per route only there: ten thousand routes in a few namespaces make a
// few lists, not ten thousand.
func (t *translator) routeCallers(r types.NamespacedName) []string {
	key := callersKey{namespace: r.Namespace}
	if t.namesRoutes(r.Namespace) {
		key.name = r.Name
	}
	if got, ok := t.callersOf[key]; ok {
		return got
	}
	out := t.grantedCallers(r.Namespace, gwapiv1.GroupName, "HTTPRoute", r.Name)
	t.callersOf[key] = out
	return out
}

// callersKey is what a route's callers depend on: its namespace and, where a grant
// there names routes, its name.
type callersKey struct{ namespace, name string }

// namesRoutes tells whether a ReferenceGrant of the namespace admits callers to
// HTTPRoutes by name.
func (t *translator) namesRoutes(namespace string) bool {
	if t.namingGrants == nil {
		t.namingGrants = map[string]bool{}
		for _, g := range t.grants {
			for _, to := range g.Spec.To {
				if to.Name != nil && string(to.Group) == gwapiv1.GroupName && to.Kind == "HTTPRoute" {
					t.namingGrants[g.Namespace] = true
				}
			}
		}
	}
	return t.namingGrants[namespace]
}

// isolationCondition is the Gateway's ConditionTenantIsolation: whether it isolates,
// and the namespaces whose callers each Envoy listener serves.
func isolationCondition(g *gatewayContext, listeners []ir.Listener) metav1.Condition {
	gen := g.gw.Generation
	if !g.isolated {
		return condition(ConditionTenantIsolation, false, ReasonIsolationOff,
			"tenant isolation is off ("+TenantIsolationAnnotation+": off): every caller that reaches the Gateway may use every route", gen)
	}
	reason, msg := ReasonIsolated, "each caller is served only the routes of its own namespace and of namespaces that admit it by ReferenceGrant; others get 403"
	if g.isolationProblem != "" {
		reason, msg = ReasonInvalidSetting, g.isolationProblem+"; "+msg
	}
	var parts []string
	for _, l := range listeners {
		parts = append(parts, fmt.Sprintf("port %d serves callers from %s", publicPort(l.Port), namespaceList(l.Tenants)))
	}
	if len(parts) > 0 {
		msg += ". " + strings.Join(parts, "; ")
	}
	return condition(ConditionTenantIsolation, true, reason, msg, gen)
}

// publicPort is the Gateway port of an Envoy port (EnvoyPort's inverse).
func publicPort(envoyPort uint32) uint32 {
	if envoyPort >= privilegedPortOffset && envoyPort < privilegedPortOffset+1024 {
		return envoyPort - privilegedPortOffset
	}
	return envoyPort
}

// namespaceList names the tenants of a listener, at most maxNamespacesInStatus of them.
func namespaceList(tenants []ir.Tenant) string {
	if len(tenants) == 0 {
		return "no namespace (no route is attached)"
	}
	names := make([]string, 0, len(tenants))
	for i, t := range tenants {
		if i == maxNamespacesInStatus {
			names = append(names, fmt.Sprintf("and %d more", len(tenants)-i))
			break
		}
		names = append(names, t.Namespace)
	}
	return "namespaces " + strings.Join(names, ", ")
}

// WithCallers returns gw with callers on every listener (the listeners are copied;
// the rest is shared).
func WithCallers(gw ir.Gateway, callers []ir.Caller) ir.Gateway {
	ls := make([]ir.Listener, len(gw.Listeners))
	copy(ls, gw.Listeners)
	for i := range ls {
		ls[i].Callers = callers
	}
	gw.Listeners = ls
	return gw
}
