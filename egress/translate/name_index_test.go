package translate

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestNameIndexIsKeptForTheSameListOnly indexes a list of Secrets, then a list each
// step makes from it: the kept index may serve only the very list it was made from,
// and whatever index comes back must find every object of the list at its own place.
func TestNameIndexIsKeptForTheSameListOnly(t *testing.T) {
	secret := func(ns, name string) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	three := func() []corev1.Secret {
		return []corev1.Secret{secret("a", "one"), secret("a", "two"), secret("b", "one")}
	}
	roomy := func() []corev1.Secret { return append(make([]corev1.Secret, 0, 8), three()...) }
	tests := []struct {
		name  string
		first func() []corev1.Secret
		next  func(first []corev1.Secret) []corev1.Secret
		kept  bool
	}{
		{"the same list", three, func(l []corev1.Secret) []corev1.Secret { return l }, true},
		{"a copy with the same names", three, slices.Clone[[]corev1.Secret], false},
		{"a Secret renamed in place", three, func(l []corev1.Secret) []corev1.Secret { l[1].Name = "three"; return l }, false},
		{"the same memory, one Secret longer", roomy, func(l []corev1.Secret) []corev1.Secret { return append(l, secret("c", "one")) }, false},
		{"the same memory, one Secret shorter", three, func(l []corev1.Secret) []corev1.Secret { return l[:2] }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := tt.first()
			c := NewCache()
			before := indexedByName[corev1.Secret](c, c.begin(), "Secrets", first)
			in := tt.next(first)
			got := indexedByName[corev1.Secret](c, c.begin(), "Secrets", in)
			if kept := samePointerMap(before, got); kept != tt.kept {
				t.Errorf("index kept = %v, want %v", kept, tt.kept)
			}
			if len(got) != len(in) {
				t.Errorf("the index holds %d names, the list %d", len(got), len(in))
			}
			for i := range in {
				if n := (types.NamespacedName{Namespace: in[i].Namespace, Name: in[i].Name}); got[n] != &in[i] {
					t.Errorf("%s is not found at its place in the list", n)
				}
			}
		})
	}
}

// samePointerMap tells whether a and b are the same map (a write to one shows in the
// other); the test only reads maps it owns.
func samePointerMap(a, b map[types.NamespacedName]*corev1.Secret) bool {
	probe := types.NamespacedName{Name: "\x00probe"}
	a[probe] = nil
	_, same := b[probe]
	delete(a, probe)
	return same
}
