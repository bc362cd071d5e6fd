package crdvalidate

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/config"
)

// TestSchemaWalkIsKubeOpenAPIs: for every object of the samples and fixtures, and for
// thousands of one-field mutations of them (a leaf replaced by a value of another type,
// a long string, a negative or huge number, null, an empty object or list; a field
// removed; a list item repeated), the walk's schema errors are exactly those of
// apiextensions-apiserver's own schema validator (as sets: the API server lists them in
// map order). The walk's memo is shared by all of them, so values it found valid in one
// object are met again in the next.
func TestSchemaWalkIsKubeOpenAPIs(t *testing.T) {
	compared, refused := 0, 0
	for _, f := range kindFixtures(t) {
		obj, kv, gvk := f.obj, f.kind, f.obj.GroupVersionKind()
		u := obj.DeepCopy()
		if kv.decode(u) != nil {
			continue
		}
		kv.prepareForCreate(u)
		for _, m := range mutations(u.Object) {
			want := errorSet(apiservervalidation.ValidateCustomResource(nil, m.value, f.reference))
			got := errorSet(apiservervalidation.ValidateCustomResource(nil, m.value, kv.schema))
			if !slices.Equal(got, want) {
				t.Errorf("%s %s, %s:\n walk: %q\n  API server's validator: %q", gvk.Kind, obj.GetName(), m.name, got, want)
			}
			compared++
			if len(want) > 0 {
				refused++
			}
		}
	}
	if compared < 1000 || refused < 300 {
		t.Fatalf("only %d objects compared, %d of them refused; the fixtures were not found", compared, refused)
	}
	t.Logf("%d objects compared, %d refused", compared, refused)
}

// kindFixture is a fixture object of a kind the built-in CRDs define, with the kind as
// compiled and apiextensions-apiserver's own schema validator of it.
type kindFixture struct {
	obj       *unstructured.Unstructured
	kind      *kindValidator
	reference apiservervalidation.SchemaValidator
}

// kindFixtures are the fixtureObjects of the built-in CRDs' kinds (the experimental ones
// too), compiled by one Validator.
func kindFixtures(t *testing.T) []kindFixture {
	t.Helper()
	v, err := New(config.CRDs, append(slices.Clone(config.CRDDirs), config.ExperimentalCRDDirs...)...)
	if err != nil {
		t.Fatal(err)
	}
	references := map[schema.GroupVersionKind]apiservervalidation.SchemaValidator{}
	var out []kindFixture
	for _, obj := range fixtureObjects(t) {
		gvk := obj.GroupVersionKind()
		if !v.Knows(gvk.GroupKind()) {
			continue
		}
		kv, err := v.kind(gvk)
		if err != nil {
			t.Fatal(err)
		}
		if references[gvk] == nil {
			references[gvk] = referenceValidator(t, v, gvk)
		}
		out = append(out, kindFixture{obj, kv, references[gvk]})
	}
	return out
}

// referenceValidator is the schema validator apiextensions-apiserver makes of the CRD.
func referenceValidator(t *testing.T, v *Validator, gvk schema.GroupVersionKind) apiservervalidation.SchemaValidator {
	t.Helper()
	crd := v.crds[gvk.GroupKind()]
	internal := internalValidation(t, servedVersion(crd, gvk.Version))
	sv, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	return sv
}

func errorSet[E interface{ Error() string }](errs []E) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	sort.Strings(out)
	return out
}

type mutation struct {
	name  string
	value map[string]any
}

// mutations are obj itself and obj changed at one place each.
func mutations(obj map[string]any) []mutation {
	out := []mutation{{"as it is", obj}}
	var walk func(path string, v any, set func(any), del func())
	walk = func(path string, v any, set func(any), del func()) {
		for _, r := range []struct {
			name string
			v    any
		}{
			{"a long string", strings.Repeat("a", 300)}, {"-1", int64(-1)}, {"2^40", int64(1 << 40)},
			{"true", true}, {"null", nil}, {"{}", map[string]any{}}, {"[]", []any{}}, {"1.5", 1.5},
		} {
			set(r.v)
			out = append(out, mutation{path + " = " + r.name, deepCopyMap(obj)})
			set(v)
		}
		if del != nil {
			del()
			out = append(out, mutation{path + " removed", deepCopyMap(obj)})
			set(v)
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				child := x[k]
				walk(path+"."+k, child, func(n any) { x[k] = n }, func() { delete(x, k) })
			}
		case []any:
			if len(x) > 0 {
				set(append(slices.Clone(x), x...))
				out = append(out, mutation{path + " repeated", deepCopyMap(obj)})
				set(v)
			}
			for i := range x {
				child := x[i]
				walk(path+"["+string(rune('0'+i%10))+"]", child, func(n any) { x[i] = n }, nil)
			}
		}
	}
	for _, top := range []string{"spec", "metadata"} {
		if v, ok := obj[top]; ok {
			walk(top, v, func(n any) { obj[top] = n }, nil)
		}
	}
	return out
}

func deepCopyMap(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// fixtureObjects are every object of the samples and of the valid and invalid fixtures.
func fixtureObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, _ := filepath.Glob("../../samples/*.yaml")
	files = append(files, "../../api/v1alpha1/testdata/valid-backends.yaml", "../../api/v1alpha1/testdata/invalid-backends.yaml",
		"testdata/valid.yaml", "testdata/invalid.yaml")
	var out []*unstructured.Unstructured
	for _, f := range files {
		out = append(out, readObjects(t, f)...)
	}
	return out
}

// readObjects decodes every object of a YAML file, as kubectl sends it (documents of
// comments only are skipped).
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		var content any
		if err := yaml.Unmarshal(doc, &content); err != nil || content == nil {
			continue // comments only
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("decoding %s: %v", path, err)
		}
		obj, err := DecodeJSON(js)
		if err != nil {
			t.Fatalf("decoding %s: %v", path, err)
		}
		out = append(out, obj)
	}
}

func internalValidation(t *testing.T, version *apiextensionsv1.CustomResourceDefinitionVersion) *apiextensions.CustomResourceValidation {
	t.Helper()
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(version.Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	return internal
}

// TestSchemaWalkSharedByGoroutines: the walk's validators and memo are shared by the
// goroutines `portcullis translate` validates on; four of them walking every fixture's
// mutations at once find what the API server's validator finds (run with -race, it also
// shows that a shared validator is only read).
func TestSchemaWalkSharedByGoroutines(t *testing.T) {
	type check struct {
		walk *schemaWalk
		obj  map[string]any
		want []string
	}
	var checks []check
	for _, f := range kindFixtures(t) {
		for _, m := range mutations(f.obj.Object) {
			checks = append(checks, check{f.kind.schema, m.value, errorSet(apiservervalidation.ValidateCustomResource(nil, m.value, f.reference))})
		}
	}
	var wg sync.WaitGroup
	wrong := make([]int, 4)
	for g := range wrong {
		wg.Go(func() {
			for i := range checks {
				c := checks[(i+g*len(checks)/4)%len(checks)]
				if !slices.Equal(errorSet(apiservervalidation.ValidateCustomResource(nil, c.obj, c.walk)), c.want) {
					wrong[g]++
				}
			}
		})
	}
	wg.Wait()
	if slices.Max(wrong) > 0 {
		t.Fatalf("walks differing from the API server's validator, per goroutine: %v", wrong)
	}
}

// TestValidatorsByPathAreBounded: a node keeps at most maxValidatorsPerNode validators,
// and every validator it gives, kept or not, reports the path asked for.
func TestValidatorsByPathAreBounded(t *testing.T) {
	var v validatorsByPath
	s := &spec.Schema{}
	for i := range 3 * maxValidatorsPerNode {
		path := "spec.items[" + strconv.Itoa(i) + "]"
		for range 2 {
			if got := v.at(s, path).Path; got != path {
				t.Fatalf("validator for %s reports %s", path, got)
			}
		}
	}
	kept := 0
	v.byPath.Range(func(any, any) bool { kept++; return true })
	if kept != maxValidatorsPerNode {
		t.Fatalf("kept %d validators, want %d", kept, maxValidatorsPerNode)
	}
}
