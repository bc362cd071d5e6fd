package controllers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// fakeEnvoy stands for Envoy's verdict on a candidate (pure code: the search is tested
// against the real Envoy in hostile_tenant_test.go): it rejects any configuration with a
// regex route or a negative connect timeout.
func fakeEnvoy(gw ir.Gateway) error {
	var bad []string
	forEachRoute(gw, func(r ir.Route) {
		if r.Match.PathType == ir.PathRegex {
			bad = append(bad, r.Name)
		}
	})
	for _, c := range gw.Clusters {
		if c.ConnectTimeout < 0 {
			bad = append(bad, c.Name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("invalid regex in %s", strings.Join(bad, ", "))
	}
	return nil
}

// runSearch publishes candidates and answers them as fakeEnvoy would until the search
// publishes an accepted candidate twice in a row; it returns every candidate published
// (the repeat once) and the last one's culprits.
func runSearch(t *testing.T, s *nackSearch, gw ir.Gateway) ([]ir.Gateway, map[string]error) {
	t.Helper()
	var published []ir.Gateway
	lastKey, lastAccepted := "\x00", false
	for range 50 {
		if len(s.verdicts) > 0 && !equalGateways(gw, s.base) {
			s.verdicts = nil
		}
		s.base = gw
		excluded := s.next(gw)
		cand, key := s.candidate(excluded), keyOf(excluded)
		if key == lastKey && lastAccepted {
			return published, s.why(excluded)
		}
		published = append(published, cand)
		p := &probe{key: key, gw: cand}
		if verdict := fakeEnvoy(cand); verdict != nil {
			s.record(key, verdict)
		} else {
			s.accepted(p)
		}
		lastKey, lastAccepted = key, fakeEnvoy(cand) == nil
	}
	t.Fatal("the search did not settle in 50 candidates")
	return nil, nil
}

func equalGateways(a, b ir.Gateway) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestNackSearchLeavesOutOnlyTheRejectedRoutes(t *testing.T) {
	tests := []struct {
		name string
		n    int
		bad  []int
	}{
		{"nothing is rejected", 6, nil},
		{"one rejected route among many", 33, []int{20}},
		{"two rejected routes in different halves", 33, []int{2, 30}},
		{"every route is rejected", 3, []int{0, 1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			good := isolationGateway(tc.n)
			s := &nackSearch{culprits: map[string]culprit{}, acked: &good}
			// Every route changes (a new host name); the bad ones get a regex Envoy rejects.
			desired := isolationGateway(tc.n)
			for i := range desired.Listeners[0].Tenants {
				vh := &desired.Listeners[0].Tenants[i].VirtualHosts[0]
				vh.Routes = slices.Clone(vh.Routes)
				vh.Routes[0].Match.Path = "/v2"
				if slices.Contains(tc.bad, i) {
					vh.Routes[0].Match.PathType = ir.PathRegex
				}
			}
			published, why := runSearch(t, s, desired)
			if len(why) != len(tc.bad) {
				t.Fatalf("left out %v, want exactly the routes of %v", why, tc.bad)
			}
			for _, b := range tc.bad {
				if e := why[fmt.Sprintf("team-%d/api", b)]; e == nil || !strings.Contains(e.Error(), "invalid regex") {
					t.Errorf("team-%d/api: reason %v, want Envoy's message", b, e)
				}
			}
			last := published[len(published)-1]
			if fakeEnvoy(last) != nil {
				t.Fatalf("the last candidate is rejected: %v", fakeEnvoy(last))
			}
			// No candidate ever took a route away: a route left out keeps what Envoy ran.
			for i, cand := range published {
				if got := len(httpRoutesIn(cand)); got != tc.n {
					t.Errorf("candidate %d serves %d HTTPRoutes, want all %d", i, got, tc.n)
				}
			}
			t.Logf("%d candidates published", len(published))
			if max := 2 + 2*len(tc.bad)*6; len(published) > max {
				t.Errorf("%d candidates published, want at most %d", len(published), max)
			}
		})
	}
}

// A culprit stays out while it is unchanged: another tenant's next change is published
// in one step, without asking Envoy about the culprit again.
func TestNackCulpritStaysOutWithoutAnotherSearch(t *testing.T) {
	good := isolationGateway(4)
	s := &nackSearch{culprits: map[string]culprit{}, acked: &good}
	desired := isolationGateway(4)
	desired.Listeners[0].Tenants[1].VirtualHosts[0].Routes = []ir.Route{{Name: "team-1/api/rule/0/match/0",
		Match: ir.RouteMatch{PathType: ir.PathRegex, Path: "/x"}, Backends: good.Listeners[0].Tenants[1].VirtualHosts[0].Routes[0].Backends}}
	runSearch(t, s, desired)

	// team-3 deletes its route.
	next := withoutRoutes(desired, map[string]bool{"team-3/api": true})
	published, why := runSearch(t, s, next)
	if len(published) != 1 || why["team-1/api"] == nil {
		t.Fatalf("published %d candidates, culprits %v; want one candidate leaving out team-1/api", len(published), why)
	}
	if slices.Contains(httpRoutesIn(published[0]), "team-3/api") {
		t.Error("team-3's deleted route is still published")
	}
}

// A rejection no unit causes (with every suspect left out Envoy still rejects) leaves
// nothing out: the Gateway shows the rejection.
func TestNackSearchBlamesNoUnitForOthersFaults(t *testing.T) {
	s := &nackSearch{culprits: map[string]culprit{}}
	gw := isolationGateway(3)
	s.base = gw
	s.record(keyOf(nil), errors.New("listener rejected"))
	all := s.next(gw)
	if len(all) != 4 {
		t.Fatalf("asked about %v, want every route and the cluster left out", all)
	}
	s.record(keyOf(all), errors.New("listener rejected"))
	if got := s.next(gw); len(got) != 0 || len(s.culprits) != 0 {
		t.Fatalf("left out %v (culprits %v), want nothing", got, s.culprits)
	}
}

// A Backend's cluster whose new settings Envoy rejects keeps the settings Envoy ran,
// with its new endpoints and without the secrets only the rejected settings named; the
// routes changed at the same time go through.
func TestNackSearchRevertsARejectedCluster(t *testing.T) {
	good := isolationGateway(3)
	good.Clusters = append(good.Clusters, &ir.Cluster{Name: "backend/team-1/own/http", ConnectTimeout: time.Second,
		Endpoints: []ir.Endpoint{{Address: "192.0.2.1", Port: 80}}})
	s := &nackSearch{culprits: map[string]culprit{}, acked: &good}

	desired := isolationGateway(3)
	desired.Clusters = append(desired.Clusters, &ir.Cluster{Name: "backend/team-1/own/http", ConnectTimeout: -time.Second,
		Credential: &ir.Credential{Header: "Authorization", Secret: "credential/team-1/own"},
		Endpoints:  []ir.Endpoint{{Address: "192.0.2.2", Port: 80}}})
	desired.Secrets = []ir.Secret{{Name: "credential/team-1/own"}}
	vh := &desired.Listeners[0].Tenants[2].VirtualHosts[0] // team-2 changes its route meanwhile
	vh.Routes = slices.Clone(vh.Routes)
	vh.Routes[0].Match.Path = "/v2"

	published, why := runSearch(t, s, desired)
	if len(why) != 1 || why["cluster backend/team-1/own/http"] == nil {
		t.Fatalf("culprits %v, want only the cluster of team-1's Backend", why)
	}
	last := published[len(published)-1]
	i := slices.IndexFunc(last.Clusters, func(c *ir.Cluster) bool { return c.Name == "backend/team-1/own/http" })
	if i < 0 {
		t.Fatal("the reverted cluster is gone: routes to it would fail")
	}
	if c := last.Clusters[i]; c.ConnectTimeout != time.Second || c.Credential != nil || c.Endpoints[0].Address != "192.0.2.2" {
		t.Errorf("cluster %+v, want the settings Envoy ran (1s, no credential) with the new endpoint 192.0.2.2", c)
	}
	if len(last.Secrets) != 0 {
		t.Errorf("secrets %v published, want none: only the rejected settings used one", last.Secrets)
	}
	if r := last.Listeners[0].Tenants[2].VirtualHosts[0].Routes[0]; r.Match.Path != "/v2" {
		t.Errorf("team-2's route matches %q, want its change /v2 published", r.Match.Path)
	}
	if desired.Secrets[0].Name != "credential/team-1/own" || len(desired.Secrets) != 1 {
		t.Errorf("the staged Gateway's secrets were changed in place: %v", desired.Secrets)
	}

	// The culprit stays reverted while unchanged; fixed, it is published as is.
	desired.Clusters = slices.Clone(desired.Clusters) // a new translation: nothing shared with the last
	fixed := *desired.Clusters[1]                     // the IR's clusters are shared: a new one
	fixed.ConnectTimeout = 2 * time.Second
	desired.Clusters[1] = &fixed
	published, why = runSearch(t, s, desired)
	if len(why) != 0 || len(published) != 1 {
		t.Fatalf("after the fix: culprits %v in %d candidates, want none in one", why, len(published))
	}
}

// A new cluster Envoy rejects becomes a stub with no settings and no endpoints: the new
// route to it answers 503 (nothing answered there before).
func TestNackSearchStubsARejectedNewCluster(t *testing.T) {
	good := isolationGateway(2)
	s := &nackSearch{culprits: map[string]culprit{}, acked: &good}
	desired := isolationGateway(2)
	desired.Clusters = append(desired.Clusters, &ir.Cluster{Name: "backend/team-0/new/http", ConnectTimeout: -time.Second,
		Endpoints: []ir.Endpoint{{Address: "192.0.2.9", Port: 443}}})
	vh := &desired.Listeners[0].Tenants[0].VirtualHosts[0]
	vh.Routes = slices.Clone(vh.Routes)
	vh.Routes[0].Backends = []ir.WeightedCluster{{Cluster: "backend/team-0/new/http", Weight: 1}}

	published, why := runSearch(t, s, desired)
	if len(why) != 1 || why["cluster backend/team-0/new/http"] == nil {
		t.Fatalf("culprits %v, want only the new cluster", why)
	}
	last := published[len(published)-1]
	i := slices.IndexFunc(last.Clusters, func(c *ir.Cluster) bool { return c.Name == "backend/team-0/new/http" })
	if i < 0 {
		t.Fatal("the rejected new cluster is gone, want a stub")
	}
	if c := last.Clusters[i]; c.ConnectTimeout != 0 || len(c.Endpoints) != 0 {
		t.Errorf("the stub is %+v, want no settings and no endpoints", c)
	}
	if r := last.Listeners[0].Tenants[1].VirtualHosts[0].Routes[0]; len(r.Backends) != 1 {
		t.Errorf("team-1's route is %+v, want it unchanged", r)
	}
}

// A culprit whose object is deleted is forgotten; one that staging holds back from the
// candidate while it still exists is kept, so it is not published again, rejected.
func TestNackCulpritsOfDeletedObjectsAreForgotten(t *testing.T) {
	good := isolationGateway(3)
	s := &nackSearch{culprits: map[string]culprit{}, acked: &good}
	desired := isolationGateway(3)
	desired.Listeners[0].Tenants[1].VirtualHosts[0].Routes = []ir.Route{{Name: "team-1/api/rule/0/match/0",
		Match: ir.RouteMatch{PathType: ir.PathRegex, Path: "/x"}, Backends: good.Listeners[0].Tenants[1].VirtualHosts[0].Routes[0].Backends}}
	runSearch(t, s, desired)
	if _, ok := s.culprits["team-1/api"]; !ok {
		t.Fatalf("culprits %v, want team-1/api", s.culprits)
	}

	held := withoutRoutes(desired, map[string]bool{"team-1/api": true}) // staged without it
	s.forgetGone(held, desired)
	if _, ok := s.culprits["team-1/api"]; !ok {
		t.Fatal("a culprit staging held back was forgotten")
	}
	gone := withoutRoutes(desired, map[string]bool{"team-1/api": true}) // deleted
	s.forgetGone(gone, gone)
	if len(s.culprits) != 0 {
		t.Fatalf("culprits %v after the route was deleted, want none", s.culprits)
	}
}
