package envoyconfig

import (
	"fmt"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// A build finds the Gateway's clusters and secrets by name. Indexing ten thousand
// clusters and twenty thousand secrets into new maps was a tenth of what a change among
// ten thousand Backends allocated (1.3 of 12.9 MB, translation and publish included),
// yet the translator's delta hands over lists with the same names in the same places
// (it replaces a changed Backend's clusters where they were). So the memo keeps each
// list's names in order with the place of each name, and a build whose list has exactly
// those names in those places finds its values through them; any other list is indexed
// anew. The places say nothing of the values, which are always read from the list
// being built.

// namePlaces is the names of one IR list in its order and the place of each; never
// modified once made.
type namePlaces struct {
	names []string
	at    map[string]int32
}

// byName finds the values of one IR list by name.
type byName[T any] struct {
	list   []T
	places *namePlaces
}

// indexByName indexes list by name, through kept when list has its names in its
// places; what names the kind in the error about a name defined twice.
func indexByName[T any](list []T, name func(*T) string, kept *namePlaces, what string) (byName[T], error) {
	if kept != nil && namesInPlace(kept.names, list, name) {
		return byName[T]{list: list, places: kept}, nil
	}
	p := &namePlaces{names: make([]string, len(list)), at: make(map[string]int32, len(list))}
	for i := range list {
		n := name(&list[i])
		if _, dup := p.at[n]; dup {
			return byName[T]{}, fmt.Errorf("%s %q is defined twice", what, n)
		}
		p.names[i], p.at[n] = n, int32(i)
	}
	return byName[T]{list: list, places: p}, nil
}

// namesInPlace tells whether list has names, in that order.
func namesInPlace[T any](names []string, list []T, name func(*T) string) bool {
	if len(names) != len(list) {
		return false
	}
	for i := range list {
		if name(&list[i]) != names[i] {
			return false
		}
	}
	return true
}

// get returns the value named name.
func (x byName[T]) get(name string) (*T, bool) {
	if x.places == nil {
		return nil, false
	}
	i, ok := x.places.at[name]
	if !ok {
		return nil, false
	}
	return &x.list[i], true
}

// clusterNamed is the IR's cluster named name.
func (b *builder) clusterNamed(name string) (*ir.Cluster, bool) {
	c, ok := b.clusters.get(name)
	if !ok {
		return nil, false
	}
	return *c, true
}

// has tells whether a value is named name.
func (x byName[T]) has(name string) bool {
	_, ok := x.get(name)
	return ok
}

// len is the number of values.
func (x byName[T]) len() int { return len(x.list) }
