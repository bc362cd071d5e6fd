package envoyconfig

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// threeHosts is validGateway with three virtual hosts on its listener, the third's
// route a redirect.
func threeHosts() ir.Gateway {
	gw := validGateway()
	l := &gw.Listeners[0]
	for _, name := range []string{"b", "c"} {
		vh := l.VirtualHosts[0]
		vh.Name, vh.Domains = name, []string{name + ".example.com"}
		vh.Routes = []ir.Route{{Name: "r-" + name, Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/" + name}, Backends: vh.Routes[0].Backends}}
		l.VirtualHosts = append(l.VirtualHosts, vh)
	}
	// A redirect to port 443 that keeps the scheme: its port is left out over https only.
	c := &l.VirtualHosts[2].Routes[0]
	c.Backends, c.Redirect = nil, &ir.Redirect{StatusCode: 302, Port: 443}
	return gw
}

// hostsOf returns the virtual host messages of the only route table, by name.
func hostsOf(t *testing.T, r Resources) map[string]*routev3.VirtualHost {
	t.Helper()
	if len(r.Routes) != 1 {
		t.Fatalf("%d route tables, want 1", len(r.Routes))
	}
	out := map[string]*routev3.VirtualHost{}
	for _, vh := range r.Routes[0].VirtualHosts {
		out[vh.Name] = vh
	}
	return out
}

// TestRouteTableReusesTheHostsThatDidNotChange changes one thing and builds again with
// the same Cache: the virtual hosts that it touches are built again, the others are the
// messages of the first build, and the result is what a build without a Cache makes.
func TestRouteTableReusesTheHostsThatDidNotChange(t *testing.T) {
	tests := []struct {
		name    string
		change  func(gw *ir.Gateway)
		rebuilt []string
	}{
		{"a route of one host", func(gw *ir.Gateway) { gw.Listeners[0].VirtualHosts[1].Routes[0].Match.Path = "/changed" }, []string{"b"}},
		{"a host added", func(gw *ir.Gateway) {
			vh := gw.Listeners[0].VirtualHosts[2]
			vh.Name, vh.Domains = "d", []string{"d.example.com"}
			gw.Listeners[0].VirtualHosts = append(gw.Listeners[0].VirtualHosts, vh)
		}, []string{"d"}},
		{"a host removed", func(gw *ir.Gateway) { gw.Listeners[0].VirtualHosts = gw.Listeners[0].VirtualHosts[:2] }, nil},
		{"the protocol of the cluster two hosts name", func(gw *ir.Gateway) { gw.Clusters[0].Protocol = ir.ProtocolHTTP2 }, []string{"api", "b"}},
		{"the table becomes a forward proxy's", func(gw *ir.Gateway) { gw.Listeners[0].ForwardProxy = true }, []string{"api", "b", "c"}},
		{"the listener's scheme", func(gw *ir.Gateway) { gw.Listeners[0].TLS = nil }, []string{"api", "b", "c"}},
		{"the callers only", func(gw *ir.Gateway) {
			gw.Listeners[0].Callers = []ir.Caller{{Prefix: "10.0.0.1/32", Namespace: "team-a", Pod: "p", ServiceAccount: "default"}}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := NewCache()
			first, err := cache.Build(threeHosts(), testOptions)
			if err != nil {
				t.Fatal(err)
			}
			gw := threeHosts()
			tt.change(&gw)
			second, err := cache.Build(gw, testOptions)
			if err != nil {
				t.Fatal(err)
			}
			cold, err := NewCache().Build(gw, testOptions)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(marshalAll(t, second), marshalAll(t, cold)) {
				t.Fatal("the build with reused virtual hosts differs from a cold build")
			}
			if second.Routes[0] == first.Routes[0] {
				t.Fatal("the route table was reused whole: the change was not seen")
			}
			before, after := hostsOf(t, first), hostsOf(t, second)
			var rebuilt []string
			for name, vh := range after {
				if name != "no-route" && before[name] != vh {
					rebuilt = append(rebuilt, name)
				}
			}
			if got, want := strings.Join(slices.Sorted(slices.Values(rebuilt)), ","), strings.Join(tt.rebuilt, ","); got != want {
				t.Errorf("rebuilt virtual hosts %q, want %q", got, want)
			}
		})
	}
}

// TestRouteTableValidatesTheHostsItBuilds makes one host invalid for Envoy's proto
// rules beside hosts reused from the last build: the build fails as a cold one does.
func TestRouteTableValidatesTheHostsItBuilds(t *testing.T) {
	cache := NewCache()
	if _, err := cache.Build(threeHosts(), testOptions); err != nil {
		t.Fatal(err)
	}
	gw := threeHosts()
	gw.Listeners[0].VirtualHosts[2].Routes[0].RequestHeaders = &ir.HeaderMutation{Set: []ir.Header{{Name: "x-a", Value: "a\r\nx-injected: 1"}}}
	_, err := cache.Build(gw, testOptions)
	if err == nil || !strings.Contains(err.Error(), `invalid route configuration "https-10443"`) {
		t.Fatalf("error %v, want the route configuration refused", err)
	}
	if _, err := cache.Build(threeHosts(), testOptions); err != nil {
		t.Fatalf("the valid table again: %v", err)
	}
}

// TestCatchAllIsLeftOutWhereARouteShadowsIt builds one virtual host of the given routes
// and reads which routes its message ends with: the catch-all answer stays wherever a
// request can still reach it, and is left out only behind a route with its very match.
func TestCatchAllIsLeftOutWhereARouteShadowsIt(t *testing.T) {
	prefix := func(name, path string) ir.Route {
		return ir.Route{Name: name, Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: path},
			Backends: []ir.WeightedCluster{{Cluster: "backend/default/api/443", Weight: 1}}}
	}
	withHeader := prefix("header", "/")
	withHeader.Match.Headers = []ir.ValueMatch{{Name: "x-team", Type: ir.MatchExact, Value: "a"}}
	withMethod := prefix("get", "/")
	withMethod.Match.Method = "GET"
	exact := prefix("exact", "/")
	exact.Match.PathType = ir.PathExact
	const deny, connect = "portcullis/denied/no-route", "portcullis/denied/no-backend-allows-this-tunnel/connect"
	tests := []struct {
		name   string
		routes []ir.Route
		proxy  bool
		want   []string
	}{
		{"a \"/\" prefix leaves the catch-all out", []ir.Route{prefix("all", "/")}, false, []string{"all"}},
		{"a longer prefix keeps it", []ir.Route{prefix("v1", "/v1")}, false, []string{"v1", deny}},
		{"a \"/\" prefix with a header match keeps it", []ir.Route{withHeader}, false, []string{"header", deny}},
		{"a \"/\" prefix for one method keeps it", []ir.Route{withMethod}, false, []string{"get", deny}},
		{"an exact \"/\" keeps it", []ir.Route{exact}, false, []string{"exact", deny}},
		{"a \"/\" prefix after narrower routes leaves it out", []ir.Route{prefix("v1", "/v1"), withHeader, prefix("all", "/")}, false, []string{"v1", "header", "all"}},
		{"on a forward proxy the CONNECT refusal stays", []ir.Route{prefix("all", "/")}, true, []string{"all", connect}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gw := validGateway()
			l := &gw.Listeners[0]
			l.ForwardProxy = tc.proxy
			l.VirtualHosts[0].Routes = tc.routes
			res, err := Build(gw, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range hostsOf(t, res)["api"].Routes {
				got = append(got, r.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("routes %q, want %q", got, tc.want)
			}
		})
	}
}
