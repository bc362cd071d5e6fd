package translate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress"
)

// TestRoutesNamingIsKeptWhileTheRoutesAreTheSame: the routes naming a Gateway are
// walked once per set of route identities. The same list again gives the very answer
// kept, with a route replaced in its place by the same identity read as it is now; a
// new list of the same identities the kept places, pointing into the new list;
// a route replaced in its place by a new generation that leaves the Gateway (as the
// benchmarks and tests edit inputs) a new walk; and routes without an identity are
// walked every time (one naming the Gateway makes the answer unusable).
func TestRoutesNamingIsKeptWhileTheRoutesAreTheSame(t *testing.T) {
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "egress"}}
	route := func(name, parent string) *gwapiv1.HTTPRoute {
		ns := gwapiv1.Namespace("gw")
		return &gwapiv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("uid-team/" + name), Generation: 1},
			Spec:       gwapiv1.HTTPRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Namespace: &ns, Name: gwapiv1.ObjectName(parent)}}}},
		}
	}
	cache := NewCache()
	naming := func(routes []*gwapiv1.HTTPRoute) ([]*gwapiv1.HTTPRoute, bool) {
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
	pointInto := func(routes []*gwapiv1.HTTPRoute, list []*gwapiv1.HTTPRoute, want ...int) bool {
		if len(routes) != len(want) {
			return false
		}
		for j, i := range want {
			if routes[j] != list[i] {
				return false
			}
		}
		return true
	}

	list := []*gwapiv1.HTTPRoute{route("a", "egress"), route("b", "other"), route("c", "egress"), route("d", "egress"), route("e", "egress"), route("f", "egress")}
	first, ok := naming(list)
	if !ok || !pointInto(first, list, 0, 2, 3, 4, 5) {
		t.Fatalf("first walk: %v (ok %v), want a, c, d, e and f of the list", names(first), ok)
	}
	again, _ := naming(list)
	if unsafe.SliceData(again) != unsafe.SliceData(first) {
		t.Errorf("the same list was walked again")
	}
	if cap(again) != len(again) {
		t.Errorf("the kept answer can be appended to in place (cap %d, len %d)", cap(again), len(again))
	}

	list[3] = list[3].DeepCopy() // replaced in its place by the same generation
	list[3].ResourceVersion = "2"
	if same, _ := naming(list); !pointInto(same, list, 0, 2, 3, 4, 5) {
		t.Errorf("a route replaced in its place by one of the same identity: %v, want the new object at its place", names(same))
	}

	copied := make([]*gwapiv1.HTTPRoute, len(list)) // new objects, as a list read again from the API server holds
	for i, r := range list {
		copied[i] = r.DeepCopy()
	}
	if moved, _ := naming(copied); !pointInto(moved, copied, 0, 2, 3, 4, 5) {
		t.Errorf("a new list of the same routes: %v, want a, c, d, e and f of the new list", names(moved))
	}

	copied[2] = route("c", "other")
	copied[2].Generation = 2
	if next, _ := naming(copied); !pointInto(next, copied, 0, 3, 4, 5) {
		t.Errorf("after c was replaced in its place by a generation naming another Gateway: %v, want a, d, e and f", names(next))
	}

	anonymous := []*gwapiv1.HTTPRoute{route("a", "egress"), route("b", "other")}
	anonymous[1].UID = ""
	if got, ok := naming(anonymous); !ok || !pointInto(got, anonymous, 0) {
		t.Fatalf("a route without identity that names another Gateway: %v (ok %v), want a", names(got), ok)
	}
	anonymous[1].Spec.ParentRefs[0].Name = "egress" // an edit nothing versions
	if got, ok := naming(anonymous); ok {
		t.Errorf("the answer over a route without identity was kept: %v, where b now names the Gateway without one", names(got))
	}
}

// TestChangedRoutesNamingIsAFullWalk: after random route edits, creates and deletes
// (some routes without an identity), the routes naming a Gateway found from the kept
// answer, with only the changed stretch walked, are those a walk of every route finds.
// Some steps must have walked a stretch: otherwise the comparison proves nothing.
func TestChangedRoutesNamingIsAFullWalk(t *testing.T) {
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "egress"}}
	rng := rand.New(rand.NewPCG(7, 11))
	next := 0
	route := func() *gwapiv1.HTTPRoute {
		next++
		ns, parent := gwapiv1.Namespace("gw"), gwapiv1.ObjectName([]string{"egress", "other"}[rng.IntN(2)])
		r := &gwapiv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprint("r", next), UID: types.UID(fmt.Sprint("uid-", next)), Generation: 1},
			Spec:       gwapiv1.HTTPRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Namespace: &ns, Name: parent}}}},
		}
		if rng.IntN(20) == 0 {
			r.UID = "" // no identity
		}
		return r
	}
	list := make([]*gwapiv1.HTTPRoute, 40)
	for i := range list {
		list[i] = route()
	}
	cache := NewCache()
	stretches := 0
	for step := range 400 {
		i := rng.IntN(len(list) + 1)
		switch op := rng.IntN(3); {
		case op == 0 && i < len(list): // an edit: a new generation, perhaps another parent
			r := list[i].DeepCopy()
			r.Generation++
			r.Spec.ParentRefs[0].Name = gwapiv1.ObjectName([]string{"egress", "other"}[rng.IntN(2)])
			list = slices.Clone(list)
			list[i] = r
		case op == 1 && i < len(list) && len(list) > 1:
			list = slices.Delete(slices.Clone(list), i, i+1)
		default:
			list = slices.Insert(slices.Clone(list), i, route())
		}
		tr := newTranslator(&egress.Resources{Gateways: []gwapiv1.Gateway{*gw}, HTTPRoutes: list}, nil, Options{Cache: cache})
		kept, wasKept := take(cache, cache.namings, "gw/egress", tr.epoch)
		seen, routes, ok := tr.routesNaming(gw)
		cold := newTranslator(&egress.Resources{Gateways: []gwapiv1.Gateway{*gw}, HTTPRoutes: list}, nil, Options{Cache: NewCache()})
		wantSeen, wantRoutes, wantOK := cold.routesNaming(gw)
		if ok != wantOK || !slices.Equal(seen, wantSeen) || !slices.Equal(routes, wantRoutes) {
			t.Fatalf("step %d: %d routes naming the Gateway (ok %v), a full walk finds %d (ok %v)", step, len(routes), ok, len(wantRoutes), wantOK)
		}
		if wasKept && !holdsIdentities(kept.ids, list) {
			stretches++
		}
	}
	if stretches < 100 {
		t.Errorf("only %d of 400 steps walked a changed stretch", stretches)
	}
}
