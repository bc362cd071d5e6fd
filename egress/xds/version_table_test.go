package xds

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// TestVersionTablePatchesAsAMapWould: a table patched again and again (names removed,
// set, set again, removed and set back, and versions a patch does not have) holds what
// one map patched the same way holds, by name and whole; every earlier table still holds
// what it held; and a table keeps its edits apart until they pass the limit, then is
// made whole again.
func TestVersionTablePatchesAsAMapWould(t *testing.T) {
	for _, size := range []int{0, 3, 40, 3000} {
		t.Run(fmt.Sprintf("%d names", size), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(size), 7))
			name := func() string { return fmt.Sprintf("n%d", rng.IntN(size+5)) }
			var table *versionTable
			want := map[string]string{}
			var earlier []*versionTable
			var held []map[string]string
			sawEdits, sawFlatten := false, false
			for step := range 400 {
				var removed, dirty []string
				for range rng.IntN(4) {
					removed = append(removed, name())
				}
				for range rng.IntN(4) + 1 {
					dirty = append(dirty, name())
				}
				version := func(n string) (string, bool) {
					if len(n)%3 == 0 { // some names have no version in this publish
						return "", false
					}
					return fmt.Sprintf("%s@%d", n, step), true
				}
				for _, n := range removed {
					delete(want, n)
				}
				for _, n := range dirty {
					if v, ok := version(n); ok {
						want[n] = v
					}
				}
				next := table.patched(removed, dirty, version)
				if table != nil && next.edits != nil && !sameMapOf(next.flat, table.flat) {
					t.Fatalf("step %d: a table with edits does not share the last flat map", step)
				}
				sawEdits = sawEdits || len(next.edits) > 0
				sawFlatten = sawFlatten || (table != nil && len(table.edits) > 0 && next.edits == nil)
				if len(next.edits) > editLimit(len(next.flat)) {
					t.Fatalf("step %d: %d edits kept over %d versions", step, len(next.edits), len(next.flat))
				}
				table = next
				if got := table.all(); !maps.Equal(got, want) {
					t.Fatalf("step %d: the table holds\n%v\nwant\n%v", step, got, want)
				}
				for i := range size + 5 {
					n := fmt.Sprintf("n%d", i)
					v, ok := table.get(n)
					if w, wok := want[n]; v != w || ok != wok {
						t.Fatalf("step %d: %s is %q %v, want %q %v", step, n, v, ok, w, wok)
					}
				}
				earlier, held = append(earlier, table), append(held, maps.Clone(want))
			}
			for i, e := range earlier {
				if !maps.Equal(e.all(), held[i]) {
					t.Fatalf("the table of step %d changed later", i)
				}
			}
			if size >= 3000 && (!sawEdits || !sawFlatten) {
				t.Fatalf("edits kept apart: %v, made whole again: %v; want both", sawEdits, sawFlatten)
			}
		})
	}
}

// sameMapOf tells whether a and b are one map.
func sameMapOf(a, b map[string]string) bool { return sameMap(a, b) || (len(a) == 0 && len(b) == 0) }
