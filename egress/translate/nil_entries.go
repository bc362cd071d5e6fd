package translate

import (
	"slices"

	"github.com/portcullis-io/portcullis/egress"
)

// withoutNilEntries is res without the nil entries of its Backends and HTTPRoutes.
// Resources holds those two kinds by pointer; neither the gatherer nor the YAML loader
// makes a nil one, but Resources is a plain value anyone may fill (FuzzTranslate does),
// and a nil entry must not panic translation. res itself is returned when it has none,
// and a kind without one keeps its very list, so that a list handed out again is still
// recognised as the same.
func withoutNilEntries(res *egress.Resources) *egress.Resources {
	if !slices.Contains(res.Backends, nil) && !slices.Contains(res.HTTPRoutes, nil) {
		return res
	}
	out := *res
	out.Backends = withoutNil(res.Backends)
	out.HTTPRoutes = withoutNil(res.HTTPRoutes)
	return &out
}

// withoutNil is items without its nil entries: items itself when it has none.
func withoutNil[T any](items []*T) []*T {
	if !slices.Contains(items, nil) {
		return items
	}
	return slices.DeleteFunc(slices.Clone(items), func(o *T) bool { return o == nil })
}
