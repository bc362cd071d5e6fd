package envoyconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// TestNamePlacesServeOnlyTheSameNamesInPlace indexes a list of clusters, then a list
// each case makes from it, through the first index's places: they may serve only a
// list with the same names in the same places, and every value must be found in the
// list being indexed, never in the one the places were made from.
func TestNamePlacesServeOnlyTheSameNamesInPlace(t *testing.T) {
	name := func(c *ir.Cluster) string { return c.Name }
	first := func() []ir.Cluster { return []ir.Cluster{{Name: "a"}, {Name: "b"}, {Name: "c"}} }
	tests := []struct {
		name string
		next func([]ir.Cluster) []ir.Cluster
		kept bool
	}{
		{"a copy, one value replaced in its place", func(l []ir.Cluster) []ir.Cluster {
			l = slices.Clone(l)
			l[1] = ir.Cluster{Name: "b", ConnectTimeout: 7}
			return l
		}, true},
		{"one renamed", func(l []ir.Cluster) []ir.Cluster { l = slices.Clone(l); l[1].Name = "d"; return l }, false},
		{"two swapped", func(l []ir.Cluster) []ir.Cluster { l = slices.Clone(l); l[0], l[1] = l[1], l[0]; return l }, false},
		{"one more", func(l []ir.Cluster) []ir.Cluster { return append(slices.Clone(l), ir.Cluster{Name: "d"}) }, false},
		{"one fewer", func(l []ir.Cluster) []ir.Cluster { return l[:2] }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := indexByName(first(), name, nil, "cluster")
			if err != nil {
				t.Fatal(err)
			}
			list := tt.next(before.list)
			got, err := indexByName(list, name, before.places, "cluster")
			if err != nil {
				t.Fatal(err)
			}
			if kept := got.places == before.places; kept != tt.kept {
				t.Errorf("places kept = %v, want %v", kept, tt.kept)
			}
			if got.len() != len(list) {
				t.Errorf("len = %d, want %d", got.len(), len(list))
			}
			for i := range list {
				if c, ok := got.get(list[i].Name); !ok || c != &list[i] {
					t.Errorf("%s is not found at its place in the list", list[i].Name)
				}
			}
			if got.has("absent") {
				t.Error("a name not in the list is found")
			}
		})
	}
}

// TestNamePlacesRefuseANameTwice: a list that has a name twice is refused, also when
// places made for another list are at hand.
func TestNamePlacesRefuseANameTwice(t *testing.T) {
	name := func(c *ir.Cluster) string { return c.Name }
	kept, err := indexByName([]ir.Cluster{{Name: "a"}, {Name: "b"}}, name, nil, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	_, err = indexByName([]ir.Cluster{{Name: "a"}, {Name: "a"}}, name, kept.places, "cluster")
	if err == nil || !strings.Contains(err.Error(), `cluster "a" is defined twice`) {
		t.Errorf("err = %v, want the cluster named as defined twice", err)
	}
}
