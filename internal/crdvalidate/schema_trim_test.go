package crdvalidate

import (
	"context"
	"slices"
	"sort"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
)

// TestTrimmedWalksAreTheFullOnes: for every object of the samples and fixtures and its
// one-field mutations (a list item repeated among them), the list and embedded-resource
// walks find exactly the same on the trimmed schemas as on the whole one.
func TestTrimmedWalksAreTheFullOnes(t *testing.T) {
	compared, duplicates := 0, 0
	for _, f := range kindFixtures(t) {
		obj, kv, gvk := f.obj, f.kind, f.obj.GroupVersionKind()
		for _, m := range mutations(obj.Object) {
			want := errorSet(listtype.ValidateListSetsAndMaps(nil, kv.structural, m.value))
			got := errorSet(listtype.ValidateListSetsAndMaps(nil, kv.lists, m.value))
			if !slices.Equal(got, want) {
				t.Errorf("%s %s, %s: list walk on the trimmed schema %q, on the whole %q", gvk.Kind, obj.GetName(), m.name, got, want)
			}
			if len(want) > 0 {
				duplicates++
			}
			wantMeta := errorSet(schemaobjectmeta.Validate(context.Background(), nil, m.value, kv.structural, false))
			gotMeta := errorSet(schemaobjectmeta.Validate(context.Background(), nil, m.value, kv.embedded, false))
			if !slices.Equal(gotMeta, wantMeta) {
				t.Errorf("%s %s, %s: embedded walk on the trimmed schema %q, on the whole %q", gvk.Kind, obj.GetName(), m.name, gotMeta, wantMeta)
			}
			compared++
		}
	}
	if compared < 1000 || duplicates < 20 {
		t.Fatalf("only %d objects compared, %d with repeated list keys; the fixtures were not found", compared, duplicates)
	}
	t.Logf("%d objects compared, %d with repeated list keys", compared, duplicates)
}

// TestTrimToKeepsThePathsToItsNodes: what is left of a schema is the branches down to
// the nodes asked for, those nodes whole.
func TestTrimToKeepsThePathsToItsNodes(t *testing.T) {
	set, mapType := "set", "map"
	leaf := structuralschema.Structural{Generic: structuralschema.Generic{Type: "string"}}
	listSet := structuralschema.Structural{Generic: structuralschema.Generic{Type: "array"}, Items: &leaf,
		Extensions: structuralschema.Extensions{XListType: &set}}
	listMap := structuralschema.Structural{Generic: structuralschema.Generic{Type: "array"},
		Extensions: structuralschema.Extensions{XListType: &mapType},
		Items:      &structuralschema.Structural{Properties: map[string]structuralschema.Structural{"name": leaf, "note": leaf}}}
	embedded := structuralschema.Structural{Extensions: structuralschema.Extensions{XEmbeddedResource: true},
		Properties: map[string]structuralschema.Structural{"kind": leaf}}
	object := func(props map[string]structuralschema.Structural) structuralschema.Structural {
		return structuralschema.Structural{Generic: structuralschema.Generic{Type: "object"}, Properties: props}
	}
	root := object(map[string]structuralschema.Structural{
		"name":   leaf,
		"plain":  object(map[string]structuralschema.Structural{"a": leaf}),
		"deep":   object(map[string]structuralschema.Structural{"tags": listSet, "x": leaf}),
		"rules":  {Generic: structuralschema.Generic{Type: "array"}, Items: &structuralschema.Structural{Properties: map[string]structuralschema.Structural{"headers": listMap, "y": leaf}}},
		"byName": {AdditionalProperties: &structuralschema.StructuralOrBool{Structural: &structuralschema.Structural{Properties: map[string]structuralschema.Structural{"template": embedded}}}},
	})
	for _, tc := range []struct {
		name string
		at   func(*structuralschema.Structural) bool
		want []string
	}{
		{"list sets and maps", isListSetOrMap, []string{".deep", ".deep.tags (whole)", ".rules", ".rules[]", ".rules[].headers (whole)"}},
		{"embedded resources", isEmbedded, []string{".byName", ".byName{}", ".byName{}.template (whole)"}},
		{"nothing", func(*structuralschema.Structural) bool { return false }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := keptPaths(trimTo(&root, tc.at), "", tc.at)
			if !slices.Equal(got, tc.want) {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
		})
	}
}

// keptPaths lists the nodes of a trimmed schema below its root, "(whole)" marking those
// where at holds (kept with everything under them).
func keptPaths(s *structuralschema.Structural, path string, at func(*structuralschema.Structural) bool) []string {
	if s == nil {
		return nil
	}
	var out []string
	visit := func(child *structuralschema.Structural, childPath string) {
		if at(child) {
			out = append(out, childPath+" (whole)")
			return
		}
		out = append(out, childPath)
		out = append(out, keptPaths(child, childPath, at)...)
	}
	for name := range s.Properties {
		p := s.Properties[name]
		visit(&p, path+"."+name)
	}
	if s.Items != nil {
		visit(s.Items, path+"[]")
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		visit(s.AdditionalProperties.Structural, path+"{}")
	}
	sort.Strings(out)
	return out
}
