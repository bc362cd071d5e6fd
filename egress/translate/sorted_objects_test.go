package translate

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestSortedObjectsSortAsSortObjects gives sortedObjects one list after the other with
// one Cache and compares each answer with a fresh stable sort: the remembered order
// must serve only a list of exactly the same names, each once.
func TestSortedObjectsSortAsSortObjects(t *testing.T) {
	steps := []struct {
		name  string
		names []string // "namespace/name", in input order; a value says which copy it is
	}{
		{"first list", []string{"b/r2", "a/r1", "b/r1", "a-x/r0"}},
		{"the same names in the same places, new copies", []string{"b/r2=v2", "a/r1=v2", "b/r1", "a-x/r0=v2"}},
		{"the same names in another order", []string{"a-x/r0", "b/r1", "b/r2", "a/r1"}},
		{"and in those places again", []string{"a-x/r0=v3", "b/r1=v3", "b/r2", "a/r1"}},
		{"a name in its place but in another namespace", []string{"a-x/r0", "b/r1", "a/r2", "a/r1"}},
		{"one name replaced", []string{"a-x/r0", "b/r1", "b/r3", "a/r1"}},
		{"a name twice, as many names as before", []string{"b/r3", "a/r1", "b/r3=second", "a-x/r0"}},
		{"the twice-named list again, copies swapped", []string{"b/r3=second", "a/r1", "b/r3", "a-x/r0"}},
		{"one name fewer", []string{"b/r3", "a/r1", "a-x/r0"}},
	}
	cache := NewCache()
	for i, step := range steps {
		in := routesNamed(step.names)
		got := sortedObjects(cache, uint64(i+1), "routes", in)
		want := routesNamed(step.names)
		sortObjects(want)
		if !slices.EqualFunc(got, want, sameRoute) {
			t.Errorf("%s: got %v, want %v", step.name, routeLabels(got), routeLabels(want))
		}
	}
}

// routesNamed makes one HTTPRoute per "namespace/name[=label]"; the label goes into an
// annotation, so that two copies of a name can be told apart.
func routesNamed(specs []string) []*gwapiv1.HTTPRoute {
	out := make([]*gwapiv1.HTTPRoute, len(specs))
	for i, s := range specs {
		ns, rest, _ := strings.Cut(s, "/")
		name, label, _ := strings.Cut(rest, "=")
		out[i] = &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"copy": label}}}
	}
	return out
}

// stripLabels is specs without their "=label" parts.
func stripLabels(specs []string) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i], _, _ = strings.Cut(s, "=")
	}
	return out
}

func sameRoute(a, b *gwapiv1.HTTPRoute) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.Annotations["copy"] == b.Annotations["copy"]
}

func routeLabels(rs []*gwapiv1.HTTPRoute) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Namespace + "/" + r.Name + "=" + r.Annotations["copy"]
	}
	return out
}

// TestKeptOrderFollowsARandomWalk adds and removes a few names per step, as creates and
// deletes do among many objects, sometimes with a name twice, and compares sortedObjects
// and sortedByKey with a fresh sort at every step. The namespaces include prefixes of
// one another ("a", "a-x", "ab"), where namespace/name order and plain string order
// part.
func TestKeptOrderFollowsARandomWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1897))
	namespaces := []string{"a", "a-x", "ab", "b", "a0"}
	present := map[string]bool{}
	var last []string
	cache := NewCache()
	for step := range 300 {
		for range 1 + rng.IntN(4) {
			name := fmt.Sprintf("%s/r%d", namespaces[rng.IntN(len(namespaces))], rng.IntN(40))
			present[name] = !present[name]
		}
		var names []string
		for name, ok := range present {
			if ok {
				names = append(names, name)
			}
		}
		if len(names) > 0 && rng.IntN(10) == 0 {
			names = append(names, names[0]+"=second")
		}
		if step > 0 && rng.IntN(4) == 0 { // the last list again, in its places: new copies
			names = slices.Clone(last)
			for i := range names {
				names[i] += fmt.Sprintf("=s%d", step)
			}
		}
		last = stripLabels(names)
		got := sortedObjects(cache, uint64(step+1), "routes", routesNamed(names))
		want := routesNamed(names)
		sortObjects(want)
		if !slices.EqualFunc(got, want, sameRoute) {
			t.Fatalf("step %d: sortedObjects gave %v, want %v", step, routeLabels(got), routeLabels(want))
		}
		keys := map[string]int{}
		for i, name := range names {
			keys[name] = i
		}
		gotKeys := sortedByKey(cache, uint64(step+1), "keys", keys, func(v int) string { return names[v] })
		if wantKeys := slices.Sorted(maps.Keys(keys)); !slices.Equal(gotKeys, wantKeys) {
			t.Fatalf("step %d: sortedByKey gave %v, want %v", step, gotKeys, wantKeys)
		}
	}
}

// TestResortedRefusesAKeptOrderThatDoesNotAddUp: a kept order with a key twice, or not
// sorted, makes resorted answer nil (the caller sorts in full) rather than a wrong order.
func TestResortedRefusesAKeptOrderThatDoesNotAddUp(t *testing.T) {
	less := func(a, b string) bool { return a < b }
	tests := []struct {
		name string
		kept []string
		set  []string
		want []string
	}{
		{"a key added", []string{"a", "c"}, []string{"a", "b", "c"}, []string{"a", "b", "c"}},
		{"a key removed and two added at the ends", []string{"b", "c"}, []string{"0", "b", "z"}, []string{"0", "b", "z"}},
		{"from an empty order", []string{}, []string{"b", "a"}, []string{"a", "b"}},
		{"kept holds a key twice", []string{"a", "a", "c"}, []string{"a", "b", "c"}, nil},
		{"kept is not sorted", []string{"c", "a"}, []string{"a", "b", "c"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := map[string]bool{}
			for _, k := range tt.set {
				set[k] = true
			}
			has := func(k string) bool { return set[k] }
			rest := func() []string { return keysNotIn(set, tt.kept, less) }
			if got := resorted(tt.kept, len(tt.set), has, rest, less); !slices.Equal(got, tt.want) {
				t.Errorf("resorted = %v, want %v", got, tt.want)
			}
		})
	}
}
