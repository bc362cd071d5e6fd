package translate

import (
	"net/netip"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// TestRouteSideFollowsItsInputs changes, one step after the other, each kind of input
// of a Gateway's route side and things that are not among them. After every step the
// translation with the warm Cache must equal a cold one, and the route side must have
// been taken from the Cache exactly when the step changed none of its inputs; a route
// side is kept whatever its routes' fate, refused ones included.
func TestRouteSideFollowsItsInputs(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "tenant-isolation.in.yaml"))
	backend := func(ns string) *egressv1alpha1.Backend { return findNamed(t, res.Backends, ns, "api") }
	route := func(ns string) *gwapiv1.HTTPRoute { return findNamed(t, res.HTTPRoutes, ns, "api") }
	runRouteSideSteps(t, res, addrs, opts, "gw/egress", []routeSideStep{
		{"first translation", func() {}, computed},
		{"unchanged", func() {}, reused},
		{"a Backend's destination moves: its cluster changes, not its name", func() {
			backend("team-a").Spec.Destination.FQDN.Hostname = "api2.example.com"
		}, reused},
		{"the DNS guard vets another address", func() {
			addrs["api2.example.com"] = resolved("203.0.113.20")
		}, reused},
		{"a Backend's only port moves: the ref still names it", func() {
			backend("team-b").Spec.Destination.Ports[0].Port = 9090
		}, reused},
		{"only a route's labels change", func() { route("team-a").Labels = map[string]string{"team": "a"} }, reused},
		{"a Backend's port is renamed: the route's cluster is another", func() {
			backend("team-b").Spec.Destination.Ports[0].Name = "web"
		}, computed},
		{"a Backend gets a second port: the route's ref no longer resolves", func() {
			b := backend("team-b")
			b.Spec.Destination.Ports = append(b.Spec.Destination.Ports, egressv1alpha1.BackendPort{Name: "alt", Port: 9091, Protocol: egressv1alpha1.PortProtocolHTTP})
		}, computed},
		{"a route gets a header match", func() {
			route("team-a").Spec.Rules[0].Matches = []gwapiv1.HTTPRouteMatch{{Headers: []gwapiv1.HTTPHeaderMatch{{Name: "x-team", Value: "a"}}}}
		}, computed},
		{"the grant admitting team-c goes", func() { res.ReferenceGrants = res.ReferenceGrants[1:] }, computed},
		{"the listener takes a hostname", func() {
			h := gwapiv1.Hostname("*.example.com")
			res.Gateways[0].Spec.Listeners[0].Hostname = &h
		}, computed},
		{"unchanged after all that", func() {}, reused},
		{"a Backend is deleted", func() { res.Backends = res.Backends[1:] }, computed},
		{"the listener admits routes of its own namespace only: the routes are refused", func() {
			same := gwapiv1.NamespacesFromSame
			res.Gateways[0].Spec.Listeners[0].AllowedRoutes.Namespaces.From = &same
		}, computed},
		{"unchanged, every route refused", func() {}, reused},
		{"a refused route's Backend is created again", func() {
			res.Backends = append(res.Backends, &egressv1alpha1.Backend{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "api"},
				Spec:       res.Backends[0].Spec,
			})
		}, computed},
		{"the listener admits every namespace again", func() {
			all := gwapiv1.NamespacesFromAll
			res.Gateways[0].Spec.Listeners[0].AllowedRoutes.Namespaces.From = &all
		}, computed},
	})
}

// TestRouteSideFollowsTheTunnels does the same on forward proxies, whose tables carry
// the tunnels every usable TLS or TCP Backend port offers to the namespaces it admits.
func TestRouteSideFollowsTheTunnels(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "forward-proxy.in.yaml"))
	runRouteSideSteps(t, res, addrs, opts, "gw/egress", []routeSideStep{
		{"first translation", func() {}, computed},
		{"unchanged", func() {}, reused},
		{"a tunnel's name resolves to another address", func() {
			addrs["api.example.com"] = resolved("203.0.113.11")
		}, reused},
		{"a tunnel's name resolves to nothing", func() { delete(addrs, "api.example.com") }, computed},
		{"it resolves again", func() { addrs["api.example.com"] = resolved("203.0.113.12") }, computed},
		{"the grant admitting team-a to db goes", func() { res.ReferenceGrants = nil }, computed},
		{"a Backend's TLS port goes", func() {
			api := findNamed(t, res.Backends, "team-a", "api")
			api.Spec.Destination.Ports = api.Spec.Destination.Ports[1:]
		}, computed},
		{"unchanged after all that", func() {}, reused},
	})
}

// routeSideStep is one edit of a translation's input and what must become of the route
// side of the Gateway the steps watch.
type routeSideStep struct {
	name string
	edit func()
	want routeSideOutcome
}

// runRouteSideSteps applies each step in turn, compares the translation with a warm
// Cache with a cold one and the route side's outcome with the step's.
func runRouteSideSteps(t *testing.T, res *egress.Resources, addrs egress.Addresses, opts Options, gateway string, steps []routeSideStep) {
	t.Helper()
	cache, versions := NewCache(), newAPIVersions()
	for _, step := range steps {
		step.edit()
		before := cache.routeSides[gateway]
		compareWithCold(t, step.name, cache, versions, res, addrs, opts)
		after := cache.routeSides[gateway]
		got := computed
		switch {
		case after == nil:
			got = notKept
		case after == before:
			got = reused
		}
		if got != step.want {
			t.Errorf("%s: the route side was %s, want %s", step.name, got, step.want)
		}
	}
}

// routeSideOutcome is what a translation did with a Gateway's route side.
type routeSideOutcome string

const (
	reused   routeSideOutcome = "reused"
	computed routeSideOutcome = "computed and kept"
	notKept  routeSideOutcome = "not kept"
)

func resolved(ip string) egress.Resolution {
	return egress.Resolution{State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr(ip)}}}
}

// findNamed returns the object of items with that namespace and name.
func findNamed[P object](t *testing.T, items []P, ns, name string) P {
	t.Helper()
	for _, o := range items {
		if o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %T named %s/%s", items, ns, name)
	var none P
	return none
}
