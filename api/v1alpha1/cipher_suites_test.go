package v1alpha1

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestCRDCipherSuitesEnumIsSupportedCipherSuites: the API server refuses exactly what
// the translator refuses, wherever the CRD has a cipherSuites field.
func TestCRDCipherSuitesEnumIsSupportedCipherSuites(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "egress.portcullis.io_backends.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	found := 0
	walkProperties(crd, func(name string, schema map[string]any) {
		if name != "cipherSuites" {
			return
		}
		found++
		items, _ := schema["items"].(map[string]any)
		var enum []string
		for _, v := range asSlice(items["enum"]) {
			enum = append(enum, v.(string))
		}
		if !slices.Equal(enum, SupportedCipherSuites) {
			t.Errorf("cipherSuites enum %v, want SupportedCipherSuites %v", enum, SupportedCipherSuites)
		}
	})
	if found == 0 {
		t.Fatal("no cipherSuites property in the Backend CRD")
	}
}

// walkProperties calls visit for every named property schema below v.
func walkProperties(v any, visit func(name string, schema map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		if props, ok := x["properties"].(map[string]any); ok {
			for name, schema := range props {
				if m, ok := schema.(map[string]any); ok {
					visit(name, m)
				}
			}
		}
		for _, child := range x {
			walkProperties(child, visit)
		}
	case []any:
		for _, child := range x {
			walkProperties(child, visit)
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
