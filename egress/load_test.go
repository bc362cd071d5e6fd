package egress

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantErr string
		check   func(*testing.T, *Resources)
	}{
		{
			name: "documents of every kind land in their lists; comment-only documents are skipped",
			input: `# leading comment
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: apps}
spec: {destination: {type: FQDN, fqdn: {hostname: api.example.com}, ports: [{name: https, port: 443, protocol: HTTPS}]}}
---
# only a comment
---
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: apps}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: apps}
`,
			check: func(t *testing.T, r *Resources) {
				if len(r.Backends) != 1 || r.Backends[0].Spec.Destination.FQDN.Hostname != "api.example.com" {
					t.Errorf("backends = %+v", r.Backends)
				}
				if len(r.Secrets) != 1 || len(r.HTTPRoutes) != 1 {
					t.Errorf("secrets=%d routes=%d, want 1 and 1", len(r.Secrets), len(r.HTTPRoutes))
				}
			},
		},
		{
			name:  "a List's items are loaded one by one",
			input: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: b}}\n",
			check: func(t *testing.T, r *Resources) {
				if len(r.ConfigMaps) != 1 || len(r.Namespaces) != 1 {
					t.Errorf("configMaps=%d namespaces=%d, want 1 and 1", len(r.ConfigMaps), len(r.Namespaces))
				}
			},
		},
		{name: "a kind translation does not read is an error naming it", input: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", wantErr: `document 1: kind "Deployment" (apiVersion "apps/v1") is not an input of translation`},
		{name: "a misspelt field is an error, not silently dropped", input: "apiVersion: egress.portcullis.io/v1alpha1\nkind: Backend\nmetadata: {name: x}\nspec: {destinaton: {}}\n", wantErr: `unknown field "destinaton"`},
		{name: "the document number is given for a later error", input: "apiVersion: v1\nkind: Secret\nmetadata: {name: ok}\n---\nkind: DaemonSet\napiVersion: apps/v1\n", wantErr: "document 2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Resources{}
			err := r.Load(strings.NewReader(tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
		})
	}
}

// TestLoadFilteredAsksForEveryObject: the filter sees each object, List items one by one
// with their own document, and what it refuses is left out without an error.
func TestLoadFilteredAsksForEveryObject(t *testing.T) {
	input := "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: refused}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: kept}}\n" +
		"---\n# only a comment\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: refused}\n"
	var asked []string
	keep := func(doc, js []byte, tm metav1.TypeMeta) bool {
		asked = append(asked, tm.Kind)
		if !json.Valid(js) || !strings.Contains(string(js), `"kind":"`+tm.Kind+`"`) {
			t.Errorf("keep got %s as JSON for a %s", js, tm.Kind)
		}
		return !strings.Contains(string(doc), "refused")
	}
	r := &Resources{}
	if err := r.LoadFiltered(strings.NewReader(input), keep); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(asked, ","); got != "ConfigMap,ConfigMap,Namespace" {
		t.Errorf("asked about %s, want ConfigMap,ConfigMap,Namespace", got)
	}
	if len(r.ConfigMaps) != 1 || r.ConfigMaps[0].Name != "kept" || len(r.Namespaces) != 0 {
		t.Errorf("loaded configMaps=%v namespaces=%v, want only the ConfigMap kept", r.ConfigMaps, r.Namespaces)
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	r := &Resources{}
	if err := r.Load(strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n")); err != nil {
		t.Fatal(err)
	}
	c := r.DeepCopy()
	c.ConfigMaps[0].Data["k"] = "changed"
	if r.ConfigMaps[0].Data["k"] != "v" {
		t.Fatal("changing the copy changed the original")
	}
}

// TestLoadXBackend: the Gateway API's experimental XBackend is an input of its own, in
// XBackends (never among Backends), and a misspelt field of it is an error.
func TestLoadXBackend(t *testing.T) {
	const doc = `apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: api, namespace: apps}
spec:
  type: ExternalHostname
  externalHostname: {hostname: api.example.com}
  port: {port: 443}
  tls: {mode: ServerOnly, validation: {hostname: api.example.com, wellKnownCACertificates: System}}
`
	r := &Resources{}
	if err := r.Load(strings.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	if len(r.XBackends) != 1 || len(r.Backends) != 0 {
		t.Fatalf("xBackends=%d backends=%d, want 1 and 0", len(r.XBackends), len(r.Backends))
	}
	if got := r.XBackends[0].Spec.ExternalHostname.Hostname; got != "api.example.com" {
		t.Errorf("hostname = %q", got)
	}
	c := r.DeepCopy()
	c.XBackends[0].Spec.Port.Port = 8443
	if r.XBackends[0].Spec.Port.Port != 443 {
		t.Error("changing the copy's XBackend changed the original")
	}
	err := (&Resources{}).Load(strings.NewReader(strings.Replace(doc, "externalHostname:", "externalHostnme:", 1)))
	if err == nil || !strings.Contains(err.Error(), `unknown field "externalHostnme"`) {
		t.Errorf("err = %v, want the misspelt field named", err)
	}
}

// TestAppendKeepsEveryKindInOrder: Append joins objects decoded apart, so each kind's
// list must keep the receiver's objects first and then the argument's, and every field
// of Resources must be a list (a field of another type would make Append panic).
func TestAppendKeepsEveryKindInOrder(t *testing.T) {
	typ := reflect.TypeFor[Resources]()
	for i := range typ.NumField() {
		if typ.Field(i).Type.Kind() != reflect.Slice {
			t.Fatalf("Resources.%s is not a list; Append cannot join it", typ.Field(i).Name)
		}
	}
	r, o := &Resources{}, &Resources{}
	for _, doc := range []struct {
		into *Resources
		js   string
	}{
		{r, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"first"}}`},
		{o, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"second"}}`},
		{o, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"apps"}}`},
	} {
		if err := doc.into.AddJSON([]byte(doc.js)); err != nil {
			t.Fatal(err)
		}
	}
	r.Append(o)
	if len(r.Secrets) != 2 || r.Secrets[0].Name != "first" || r.Secrets[1].Name != "second" {
		t.Errorf("Secrets after Append: %v", r.Secrets)
	}
	if len(r.Namespaces) != 1 || r.Namespaces[0].Name != "apps" {
		t.Errorf("Namespaces after Append: %v", r.Namespaces)
	}
}
