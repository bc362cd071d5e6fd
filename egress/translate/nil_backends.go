package translate

import (
	"slices"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// withoutNilBackends is res without the nil entries of its Backends. Resources holds
// its Backends by pointer; neither the gatherer nor the YAML loader makes a nil one, but
// Resources is a plain value anyone may fill, and a nil entry must not panic
// translation. res itself is returned when it has none, so that a list handed out again
// is still recognised as the same.
func withoutNilBackends(res *egress.Resources) *egress.Resources {
	if !slices.Contains(res.Backends, nil) {
		return res
	}
	out := *res
	out.Backends = slices.DeleteFunc(slices.Clone(res.Backends), func(b *egressv1alpha1.Backend) bool { return b == nil })
	return &out
}
