package translate

import (
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress"
)

// TestRoutesNamingIsKeptWhileTheListIsTheSame: the routes naming a Gateway are walked
// once per list of routes; the same list again gives the kept answer, a new list (a
// route edited away from the Gateway) a new walk, and routes without an identity are
// walked every time.
func TestRoutesNamingIsKeptWhileTheListIsTheSame(t *testing.T) {
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "egress"}}
	route := func(name, parent string) gwapiv1.HTTPRoute {
		ns := gwapiv1.Namespace("gw")
		return gwapiv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("uid-team/" + name), Generation: 1},
			Spec:       gwapiv1.HTTPRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Namespace: &ns, Name: gwapiv1.ObjectName(parent)}}}},
		}
	}
	cache := NewCache()
	naming := func(routes []gwapiv1.HTTPRoute) ([]*gwapiv1.HTTPRoute, bool) {
		tr := newTranslator(&egress.Resources{Gateways: []gwapiv1.Gateway{*gw}, HTTPRoutes: routes}, nil, Options{Cache: cache})
		_, out, ok := tr.routesNaming(gw)
		return out, ok
	}
	names := func(routes []*gwapiv1.HTTPRoute) []string {
		var out []string
		for _, r := range routes {
			out = append(out, r.Name)
		}
		return out
	}

	list := []gwapiv1.HTTPRoute{route("a", "egress"), route("b", "other"), route("c", "egress"), route("d", "egress"), route("e", "egress"), route("f", "egress")}
	first, ok := naming(list)
	if !ok || len(first) != 5 || first[0] != &list[0] || first[1] != &list[2] || first[4] != &list[5] {
		t.Fatalf("first walk: %v (ok %v), want a, c, d, e and f of the list", names(first), ok)
	}
	again, _ := naming(list)
	if unsafe.SliceData(again) != unsafe.SliceData(first) {
		t.Errorf("the same list was walked again")
	}
	if cap(again) != len(again) {
		t.Errorf("the kept answer can be appended to in place (cap %d, len %d)", cap(again), len(again))
	}

	edited := []gwapiv1.HTTPRoute{list[0], list[1], route("c", "other"), list[3], list[4], list[5]}
	edited[2].Generation = 2
	next, _ := naming(edited)
	if len(next) != 4 || next[0] != &edited[0] || next[1] != &edited[3] {
		t.Errorf("after c left the Gateway in a new list: %v, want a, d, e and f of the new list", names(next))
	}

	anonymous := []gwapiv1.HTTPRoute{route("a", "egress")}
	anonymous[0].UID = ""
	if _, ok := naming(anonymous); ok {
		t.Fatalf("a route without identity was answered as kept-worthy")
	}
	if _, ok := naming(anonymous); ok || cache.namings["gw/egress"] != nil && sameList(cache.namings["gw/egress"].list, anonymous) {
		t.Errorf("an answer for routes without identity was kept")
	}
}
