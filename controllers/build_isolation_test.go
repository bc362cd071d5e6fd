package controllers

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// isolationGateway has n good routes, each its own HTTPRoute of its own tenant, and the
// routes named in bad carry a regex that does not compile (the translator refuses it
// too; here it stands for anything that slips past).
func isolationGateway(n int, bad ...int) ir.Gateway {
	l := ir.Listener{Name: "http-10080", Port: 10080, Isolated: true}
	for i := range n {
		ns := fmt.Sprintf("team-%d", i)
		r := ir.Route{Name: ns + "/api/rule/0/match/0", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/"},
			Backends: []ir.WeightedCluster{{Cluster: "backend/shared/api/http", Weight: 1}}}
		for _, b := range bad {
			if b == i {
				r.Match = ir.RouteMatch{PathType: ir.PathRegex, Path: "/(unclosed"}
			}
		}
		vh := []ir.VirtualHost{{Name: "api", Domains: []string{"api.example.com"}, Routes: []ir.Route{r}}}
		l.Tenants = append(l.Tenants, ir.Tenant{Namespace: ns, VirtualHosts: vh})
	}
	return ir.Gateway{Name: "gw/egress", Listeners: []ir.Listener{l},
		Clusters: []*ir.Cluster{{Name: "backend/shared/api/http", Protocol: ir.ProtocolHTTP1}}}
}

func TestBuildIsolatingLeavesOutOnlyTheFailingRoutes(t *testing.T) {
	tests := []struct {
		name string
		n    int
		bad  []int
	}{
		{"nothing fails", 5, nil},
		{"one failing route among many", 40, []int{17}},
		{"two failing routes in different halves", 40, []int{3, 31}},
		{"every route fails", 3, []int{0, 1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, built, why, err := buildIsolating(isolationGateway(tc.n, tc.bad...), plainBuild)
			if err != nil {
				t.Fatalf("buildIsolating: %v", err)
			}
			if len(why) != len(tc.bad) {
				t.Fatalf("left out %v, want exactly the routes of %v", why, tc.bad)
			}
			for _, b := range tc.bad {
				route := fmt.Sprintf("team-%d/api", b)
				if e := why[route]; e == nil || !strings.Contains(e.Error(), "missing closing )") {
					t.Errorf("%s: reason %v, want the build error naming the regex", route, e)
				}
			}
			if got := len(httpRoutesIn(built)); got != tc.n-len(tc.bad) {
				t.Errorf("%d routes kept, want %d", got, tc.n-len(tc.bad))
			}
		})
	}
}

// A cluster whose configuration fails to build is left out, not the routes to it: they
// answer 503 (a Backend's settings are its tenant's, like its routes).
func TestBuildIsolatingLeavesOutAFailingCluster(t *testing.T) {
	gw := isolationGateway(3)
	gw.Clusters = append(gw.Clusters, &ir.Cluster{Name: "backend/team-1/own/http",
		RequestHeaders: &ir.HeaderMutation{Set: []ir.Header{{Name: "host", Value: "x"}}}})
	vh := &gw.Listeners[0].Tenants[1].VirtualHosts[0]
	vh.Routes = slices.Clone(vh.Routes)
	vh.Routes[0].Backends = []ir.WeightedCluster{{Cluster: "backend/team-1/own/http", Weight: 1}}

	_, built, why, err := buildIsolating(gw, plainBuild)
	if err != nil || len(why) != 1 || why["cluster backend/team-1/own/http"] == nil {
		t.Fatalf("err = %v, left out %v; want only the failing cluster left out", err, why)
	}
	if r := built.Listeners[0].Tenants[1].VirtualHosts[0].Routes[0]; r.DirectResponse == nil || r.DirectResponse.StatusCode != 503 {
		t.Errorf("team-1's route to the left-out cluster is %+v, want a 503", r)
	}
	if r := built.Listeners[0].Tenants[0].VirtualHosts[0].Routes[0]; r.DirectResponse != nil || len(r.Backends) != 1 {
		t.Errorf("team-0's route is %+v, want it unchanged", r)
	}
	if r := gw.Listeners[0].Tenants[1].VirtualHosts[0].Routes[0]; r.DirectResponse != nil {
		t.Error("the staged Gateway's route was changed in place")
	}
}

// A failure that is no unit's (a listener's) is reported, not hidden by leaving units
// out.
func TestBuildIsolatingReportsFailuresOfOtherObjects(t *testing.T) {
	gw := isolationGateway(3)
	gw.Listeners[0].TLS = &ir.ListenerTLS{CertificateSecrets: []string{"tls/missing"}}
	if _, _, why, err := buildIsolating(gw, plainBuild); err == nil || len(why) != 0 {
		t.Fatalf("err = %v, left out %v; want the listener's error and nothing left out", err, why)
	}
}

func plainBuild(gw ir.Gateway) (envoyconfig.Resources, error) {
	return envoyconfig.Build(gw, envoyconfig.Options{})
}

// TestWithoutClustersClosesTheStreamShareOfGoneClusters: a stream route's connections to
// a cluster left out of the build are closed (its weight joins the invalid share), its
// other clusters keep theirs, in the shared table and the tenants' alike.
func TestWithoutClustersClosesTheStreamShareOfGoneClusters(t *testing.T) {
	route := ir.StreamRoute{Name: "tcproute/a/db", ServerNames: []string{"*"}, InvalidWeight: 1,
		Backends: []ir.WeightedCluster{{Cluster: "tunnel/a/db/pg", Weight: 3}, {Cluster: "tunnel/a/other/pg", Weight: 2}}}
	gw := ir.Gateway{
		Clusters:  []*ir.Cluster{{Name: "tunnel/a/db/pg", Protocol: ir.ProtocolTCP}, {Name: "tunnel/a/other/pg", Protocol: ir.ProtocolTCP}},
		Listeners: []ir.Listener{{Name: "tcp-5432", Kind: ir.ListenerTCP, Streams: []ir.StreamRoute{route}, Tenants: []ir.Tenant{{Namespace: "a", Streams: []ir.StreamRoute{route}}}}},
	}
	got := withoutClusters(gw, map[string]bool{"tunnel/a/db/pg": true})
	want := ir.StreamRoute{Name: route.Name, ServerNames: route.ServerNames, InvalidWeight: 4, Backends: []ir.WeightedCluster{{Cluster: "tunnel/a/other/pg", Weight: 2}}}
	for what, r := range map[string]ir.StreamRoute{"shared": got.Listeners[0].Streams[0], "tenant": got.Listeners[0].Tenants[0].Streams[0]} {
		if !reflect.DeepEqual(r, want) {
			t.Errorf("%s table: %+v, want %+v", what, r, want)
		}
	}
	if !reflect.DeepEqual(gw.Listeners[0].Streams[0], route) {
		t.Errorf("the input changed: %+v", gw.Listeners[0].Streams[0])
	}
}
