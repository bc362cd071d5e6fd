package translate

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestLessNameOrdersLikeTheJoinedStrings compares lessName with comparing the
// "namespace/name" strings themselves, over every pair drawn from names whose
// characters sit on both sides of '/' in byte order ('-' and '.' below it, letters and
// digits above it).
func TestLessNameOrdersLikeTheJoinedStrings(t *testing.T) {
	parts := []string{"", "a", "a-", "a.b", "a0", "ab", "a-b", "b", "z"}
	var names []types.NamespacedName
	for _, ns := range parts {
		for _, n := range parts {
			names = append(names, types.NamespacedName{Namespace: ns, Name: n})
		}
	}
	names = append(names, types.NamespacedName{Namespace: "a/b", Name: "c"}, types.NamespacedName{Namespace: "a", Name: "b/c"})
	for _, x := range names {
		for _, y := range names {
			if got, want := lessName(x, y), x.String() < y.String(); got != want {
				t.Errorf("lessName(%q, %q) = %v, want %v", x, y, got, want)
			}
		}
	}
}
