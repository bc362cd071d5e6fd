package translate

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// backendSlot is one Backend of the input and, once computed, its translation. Keeping
// both under one index entry saves, per Backend, the lookups and insertions of a second
// map: with ten thousand Backends, map probes are a good part of a translation.
type backendSlot struct {
	name types.NamespacedName
	b    *egressv1alpha1.Backend
	tb   *translatedBackend
	// until is when the verdict of one of the Backend's certificate checks changes
	// (zero: never), set once it is translated.
	until time.Time
}

// indexBackends indexes the Backends by name; of two with one name, the last counts.
func indexBackends(in []egressv1alpha1.Backend) map[types.NamespacedName]*backendSlot {
	slots := make([]backendSlot, len(in))
	out := make(map[types.NamespacedName]*backendSlot, len(in))
	for i := range in {
		slots[i] = backendSlot{name: nameOf(&in[i]), b: &in[i]}
		out[slots[i].name] = &slots[i]
	}
	return out
}
