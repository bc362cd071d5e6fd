package controllers

import (
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// TestGatheredIndexKeepsOnlyTheListsItIndexed: the index finds the objects of the lists
// it was last given; a kind whose list is the very slice it indexed keeps its map, a
// list with the same names in the same places is found through the same map but in the
// new list, and any other list of the kind (the same array with another length, names
// in other places) is indexed again.
func TestGatheredIndexKeepsOnlyTheListsItIndexed(t *testing.T) {
	backend := func(name, rv string) *egressv1alpha1.Backend {
		return &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, ResourceVersion: rv}}
	}
	routes := []*gwapiv1.HTTPRoute{{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "r"}}}
	first := []*egressv1alpha1.Backend{backend("a", "1"), backend("b", "1")}
	second := []*egressv1alpha1.Backend{backend("a", "2"), backend("b", "2")}
	backendType, routeType := reflect.TypeFor[*egressv1alpha1.Backend](), reflect.TypeFor[*gwapiv1.HTTPRoute]()
	find := func(idx *gatheredIndex, name string) string {
		o, ok := idx.find(gatheredKey{backendType, types.NamespacedName{Namespace: "apps", Name: name}})
		if !ok {
			return "absent"
		}
		return o.GetResourceVersion()
	}

	var idx gatheredIndex
	idx.update(&egress.Resources{Backends: first, HTTPRoutes: routes})
	routeIndex := idx.kinds[routeType]
	if got := find(&idx, "a"); got != "1" {
		t.Fatalf("after the first list, Backend a is at version %s; want 1", got)
	}
	if o, ok := idx.find(gatheredKey{routeType, types.NamespacedName{Namespace: "apps", Name: "r"}}); !ok || o != routes[0] {
		t.Fatal("the route is not found as the gathered object itself")
	}

	idx.update(&egress.Resources{Backends: second, HTTPRoutes: routes})
	if got := find(&idx, "a"); got != "2" {
		t.Fatalf("after a new Backend list, Backend a is at version %s; want 2", got)
	}
	if idx.kinds[routeType] != routeIndex {
		t.Fatal("the route list was the same slice, yet it was indexed again")
	}

	copied := []*gwapiv1.HTTPRoute{routes[0].DeepCopy()}
	idx.update(&egress.Resources{Backends: second[:1], HTTPRoutes: copied})
	if got := find(&idx, "b"); got != "absent" {
		t.Fatalf("the list without Backend b (same array, shorter) still finds it at version %s", got)
	}
	if o, ok := idx.find(gatheredKey{routeType, types.NamespacedName{Namespace: "apps", Name: "r"}}); !ok || o != copied[0] {
		t.Fatal("a copy of the route list, same names in the same places, still finds the route of the list indexed before")
	}

	idx.update(&egress.Resources{Backends: second})
	swapped := []*egressv1alpha1.Backend{backend("b", "3"), backend("a", "3")}
	idx.update(&egress.Resources{Backends: swapped})
	if got := find(&idx, "a"); got != "3" {
		t.Fatalf("after a list with the names in other places, Backend a is at version %s; want 3", got)
	}
	if o, _ := idx.find(gatheredKey{backendType, types.NamespacedName{Namespace: "apps", Name: "b"}}); o != swapped[0] {
		t.Fatal("Backend b is not found in its new place")
	}

	idx.update(&egress.Resources{})
	if got := find(&idx, "a"); got != "absent" {
		t.Fatalf("with no Backends gathered, Backend a is still found at version %s", got)
	}
}

// TestStaleRoutesAreOursWithoutAStatus: a route is stale when it carries a parent entry
// of ours (or a newer version of it is known to) and translation gave it no status; another controller's entries, and routes
// translation gave a status, are left alone.
func TestStaleRoutesAreOursWithoutAStatus(t *testing.T) {
	const ours, theirs = gwapiv1.GatewayController("portcullis.io/gateway-controller"), gwapiv1.GatewayController("example.com/other")
	route := func(name string, controllers ...gwapiv1.GatewayController) gwapiv1.HTTPRoute {
		r := gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
		for _, c := range controllers {
			r.Status.Parents = append(r.Status.Parents, gwapiv1.RouteParentStatus{ControllerName: c})
		}
		return r
	}
	items := []gwapiv1.HTTPRoute{
		route("ours-written", ours),
		route("ours-dropped", theirs, ours),
		route("theirs-only", theirs),
		route("no-parents"),
		route("ours-dropped-too", ours),
		route("ours-written-since-the-gather"),
	}
	written := map[string][]gwapiv1.RouteParentStatus{"apps/ours-written": nil, "apps/theirs-only": nil}
	known := func(o client.Object) bool { return o.GetName() == "ours-written-since-the-gather" }
	got := staleRoutes(items, byValue[gwapiv1.HTTPRoute, *gwapiv1.HTTPRoute](), func(r *gwapiv1.HTTPRoute) []gwapiv1.RouteParentStatus { return r.Status.Parents }, written, ours, known)
	want := []string{"apps/ours-dropped", "apps/ours-dropped-too", "apps/ours-written-since-the-gather"}
	if !slices.Equal(got, want) {
		t.Fatalf("stale routes = %q; want %q", got, want)
	}
}
