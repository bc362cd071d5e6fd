package translate

import (
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
		{"the same names in another order", []string{"a-x/r0", "b/r1", "b/r2", "a/r1"}},
		{"one name replaced", []string{"a-x/r0", "b/r1", "b/r3", "a/r1"}},
		{"a name twice, as many names as before", []string{"b/r3", "a/r1", "b/r3=second", "a-x/r0"}},
		{"the twice-named list again, copies swapped", []string{"b/r3=second", "a/r1", "b/r3", "a-x/r0"}},
		{"one name fewer", []string{"b/r3", "a/r1", "a-x/r0"}},
	}
	cache := NewCache()
	for i, step := range steps {
		in := routesNamed(step.names)
		got := sortedObjects[gwapiv1.HTTPRoute](cache, uint64(i+1), "routes", in)
		want := pointers(routesNamed(step.names))
		sortObjects(want)
		if !slices.EqualFunc(got, want, sameRoute) {
			t.Errorf("%s: got %v, want %v", step.name, routeLabels(got), routeLabels(want))
		}
	}
}

// routesNamed makes one HTTPRoute per "namespace/name[=label]"; the label goes into an
// annotation, so that two copies of a name can be told apart.
func routesNamed(specs []string) []gwapiv1.HTTPRoute {
	out := make([]gwapiv1.HTTPRoute, len(specs))
	for i, s := range specs {
		ns, rest, _ := strings.Cut(s, "/")
		name, label, _ := strings.Cut(rest, "=")
		out[i] = gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"copy": label}}}
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
