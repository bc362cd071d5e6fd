package translate

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestRoutePlacesFindEveryKeptRoute: whatever the order the routes now come in, each
// kept one is found at its place and a route not kept is not found; the map is built
// only when a route is found neither at the cursor nor one past it and is not an edit
// of the route at the cursor.
func TestRoutePlacesFindEveryKeptRoute(t *testing.T) {
	id := func(name string, generation int64) routeSeen {
		return routeSeen{uid: types.UID(name), generation: generation}
	}
	kept := []routeSeen{id("a", 1), id("b", 1), id("c", 1), id("d", 1), id("e", 1)}
	tests := []struct {
		name    string
		now     []routeSeen
		want    []int // the place of each route now; -1: not kept
		wantMap bool
	}{
		{"the same routes in order", kept, []int{0, 1, 2, 3, 4}, false},
		{"one edited (a new generation)", []routeSeen{id("a", 1), id("b", 1), id("c", 2), id("d", 1), id("e", 1)}, []int{0, 1, -1, 3, 4}, false},
		{"one created in between", []routeSeen{id("a", 1), id("b", 1), id("new", 1), id("c", 1), id("d", 1), id("e", 1)}, []int{0, 1, -1, 2, 3, 4}, true},
		{"one deleted", []routeSeen{id("a", 1), id("c", 1), id("d", 1), id("e", 1)}, []int{0, 2, 3, 4}, false},
		{"the first deleted, one created last", []routeSeen{id("b", 1), id("c", 1), id("d", 1), id("e", 1), id("f", 1)}, []int{1, 2, 3, 4, -1}, true},
		{"the last edited", []routeSeen{id("a", 1), id("b", 1), id("c", 1), id("d", 1), id("e", 3)}, []int{0, 1, 2, 3, -1}, false},
		{"another order", []routeSeen{id("e", 1), id("d", 1), id("c", 1), id("b", 1), id("a", 1)}, []int{4, 3, 2, 1, 0}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := routePlaces{kept: kept}
			for j, seen := range tt.now {
				i, ok := p.find(seen)
				if want := tt.want[j]; ok != (want >= 0) || ok && i != want {
					t.Errorf("route %v: place %d (found %v), want %d", seen, i, ok, want)
				}
			}
			if built := p.byID != nil; built != tt.wantMap {
				t.Errorf("map built: %v, want %v", built, tt.wantMap)
			}
		})
	}
}
