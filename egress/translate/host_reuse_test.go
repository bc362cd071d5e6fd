package translate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// TestRouteEditKeepsTheHostsItDoesNotReach: after one route edit, translated as a
// route delta, every virtual host the edit does not reach is the kept one (its routes
// the very memory of the translation before), and every host it reaches is made again;
// the result is a cold translation's (compareWithCold). A wildcard route reaches every
// host it covers. Both kinds of table are checked: the shared one and a tenant's.
func TestRouteEditKeepsTheHostsItDoesNotReach(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(res *egress.Resources)
		remade []string // the domains whose hosts are made again
	}{
		{name: "nothing changed", edit: func(*egress.Resources) {}},
		{name: "one route's path", edit: editPath("api3"), remade: []string{"api3.example.com"}},
		{name: "a wildcard route's path", edit: editPath("wild"),
			remade: []string{"*.example.com", "api0.example.com", "api1.example.com", "api2.example.com", "api3.example.com", "api4.example.com"}},
		{name: "a route moved to another host", edit: func(res *egress.Resources) {
			r := routeNamed(res, "api3")
			r.Spec.Hostnames = []gwapiv1.Hostname{"api3.example.org"}
		}, remade: []string{"api3.example.org"}},
		{name: "one of two routes of a host", edit: editPath("twin1"), remade: []string{"twin.example.org"}},
	}
	for _, isolation := range []string{"on", "off"} {
		for _, tt := range tests {
			t.Run("isolation "+isolation+"/"+tt.name, func(t *testing.T) {
				res, addrs := hostReuseInput(t, isolation)
				cache, versions := NewCache(), newAPIVersions()
				before := tableHosts(t, compareWithCold(t, "before", cache, versions, res, addrs, Options{}))
				deltas := cache.Deltas()
				tt.edit(res)
				after := tableHosts(t, compareWithCold(t, "after", cache, versions, res, addrs, Options{}))
				if cache.Deltas() != deltas+1 {
					t.Fatalf("the edit was not translated as a delta")
				}
				for domain, routes := range after {
					kept := len(routes) > 0 && len(before[domain]) > 0 && &routes[0] == &before[domain][0]
					if want := !slices.Contains(tt.remade, domain); kept != want {
						t.Errorf("host %s kept: %v, want %v", domain, kept, want)
					}
				}
			})
		}
	}
}

// editPath gives the route's only rule a path match that depends on its last one.
func editPath(route string) func(res *egress.Resources) {
	return func(res *egress.Resources) {
		r := routeNamed(res, route)
		prefix, path := gwapiv1.PathMatchPathPrefix, "/v"+fmt.Sprint(len(r.Spec.Rules[0].Matches))
		r.Spec.Rules[0].Matches = append(r.Spec.Rules[0].Matches, gwapiv1.HTTPRouteMatch{Path: &gwapiv1.HTTPPathMatch{Type: &prefix, Value: &path}})
	}
}

func routeNamed(res *egress.Resources, name string) *gwapiv1.HTTPRoute {
	for i, r := range res.HTTPRoutes {
		if r.Name == name {
			res.HTTPRoutes[i] = r.DeepCopy() // replaced, not modified, as the manager's are
			return res.HTTPRoutes[i]
		}
	}
	panic("no HTTPRoute " + name)
}

// tableHosts maps each domain of the only HTTP listener's table (the shared one, or the
// only tenant's) to its routes.
func tableHosts(t *testing.T, r Result) map[string][]ir.Route {
	t.Helper()
	if len(r.Gateways) != 1 || len(r.Gateways[0].Listeners) != 1 {
		t.Fatalf("want one Gateway with one listener, got %d Gateways", len(r.Gateways))
	}
	l := r.Gateways[0].Listeners[0]
	vhosts := l.VirtualHosts
	if l.Isolated {
		if len(l.Tenants) != 1 || len(vhosts) != 0 {
			t.Fatalf("want one tenant table and no shared one, got %d and %d hosts", len(l.Tenants), len(vhosts))
		}
		vhosts = l.Tenants[0].VirtualHosts
	}
	out := map[string][]ir.Route{}
	for _, vh := range vhosts {
		out[vh.Domains[0]] = vh.Routes
	}
	return out
}

// classYAML is the Portcullis GatewayClass, the start of most hand-written inputs.
const classYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.io/gateway-controller}
---
`

// hostReuseInput is a Gateway with tenant isolation on or off and, in namespace apps,
// five routes of one host each under *.example.com, a wildcard route covering them,
// and two routes sharing twin.example.org.
func hostReuseInput(t *testing.T, isolation string) (*egress.Resources, egress.Addresses) {
	t.Helper()
	var doc strings.Builder
	fmt.Fprintf(&doc, classYAML+`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: gw, annotations: {%s: "%s"}}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: apps}
spec:
  destination: {type: FQDN, fqdn: {hostname: api.example.net}, ports: [{name: http, port: 80, protocol: HTTP}]}
`, TenantIsolationAnnotation, isolation)
	route := func(name, host string) {
		fmt.Fprintf(&doc, `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s, namespace: apps}
spec:
  parentRefs: [{name: egress, namespace: gw}]
  hostnames: ["%s"]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
`, name, host)
	}
	for i := range 5 {
		route(fmt.Sprintf("api%d", i), fmt.Sprintf("api%d.example.com", i))
	}
	route("wild", "*.example.com")
	route("twin1", "twin.example.org")
	route("twin2", "twin.example.org")
	res := &egress.Resources{}
	if err := res.Load(strings.NewReader(doc.String())); err != nil {
		t.Fatal(err)
	}
	return res, egress.Addresses{"api.example.net": {State: egress.ResolutionResolved}}
}
