package localenv

import (
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/config"
)

func TestDecodeYAML(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantKinds string
		wantErr   string
	}{
		{name: "documents in order, empty ones skipped", in: "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n", wantKinds: "Namespace,ConfigMap"},
		{name: "a document without kind is refused with its position", in: "apiVersion: v1\nkind: Namespace\n---\napiVersion: v1\nmetadata: {name: x}\n", wantErr: "document 2: apiVersion and kind are required"},
		{name: "a list is not an object", in: "- a\n- b\n", wantErr: "document 1: not an object"},
		{name: "broken YAML is refused", in: "kind: [\n", wantErr: "document 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := DecodeYAML([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
			}
			if got := strings.Join(kinds, ","); got != tt.wantKinds {
				t.Fatalf("kinds %s, want %s", got, tt.wantKinds)
			}
		})
	}
}

// TestEmbeddedCRDs: the binary carries our CRD and the Gateway API's, and skips the
// kustomization files beside them.
func TestEmbeddedCRDs(t *testing.T) {
	names := map[string]bool{}
	for _, dir := range config.CRDDirs {
		objs, err := DecodeDir(config.CRDs, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() == "Kustomization" {
				t.Fatalf("%s: a kustomization was decoded as an object", dir)
			}
			names[o.GetKind()+"/"+o.GetName()] = true
		}
	}
	for _, want := range []string{
		"CustomResourceDefinition/backends.egress.portcullis.io",
		"CustomResourceDefinition/gateways.gateway.networking.k8s.io",
		"CustomResourceDefinition/httproutes.gateway.networking.k8s.io",
		"CustomResourceDefinition/backendtlspolicies.gateway.networking.k8s.io",
		"CustomResourceDefinition/referencegrants.gateway.networking.k8s.io",
	} {
		if !names[want] {
			t.Errorf("%s is not embedded; embedded: %v", want, names)
		}
	}
}
