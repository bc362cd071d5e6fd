package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// TestStreamedYAMLIsTheWholeDocumentsConversion: writing the result one resource at a
// time gives exactly the bytes of converting the whole document at once (what
// `portcullis translate` printed before it streamed), for Gateways with secrets,
// several resource kinds and none at all; and the emitter wrote every piece itself.
func TestStreamedYAMLIsTheWholeDocumentsConversion(t *testing.T) {
	tests := []struct {
		name  string
		files []string
	}{
		{"mutual TLS: clusters, endpoints, listeners, routes, secrets", []string{"../../samples/00-gateway.yaml", "../../samples/03-fqdn-mtls.yaml"}},
		{"the README's example", []string{"../../examples/translate/egress.yaml"}},
		{"a Gateway without routes", []string{"../../samples/00-gateway.yaml"}},
		{"no Gateway", []string{"../../samples/01-fqdn-system-ca.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			adm, err := newAdmission()
			if err != nil {
				t.Fatal(err)
			}
			res, err := loadFiles(tc.files, adm)
			if err != nil {
				t.Fatal(err)
			}
			if err := adm.addTo(res); err != nil {
				t.Fatal(err)
			}
			result := translate.Translate(res, nil, translate.Options{Now: time.Unix(0, 0)})
			var got bytes.Buffer
			e := &yamlEmitter{}
			if err := e.result(&got, result, envoyconfig.Options{}); err != nil {
				t.Fatal(err)
			}
			if want := wholeDocumentYAML(t, result); !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("streamed YAML differs from the whole document's conversion:\n--- got\n%s\n--- want\n%s", got.Bytes(), want)
			}
			if n := e.slow.Load(); n > 0 {
				t.Errorf("%d pieces went through the YAML library's slow conversion; the emitter should write all of these", n)
			}
		})
	}
}

// wholeDocumentYAML is the result converted at once, as JSON output's document.
func wholeDocumentYAML(t *testing.T, result translate.Result) []byte {
	t.Helper()
	doc, err := resultDocument(result, envoyconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		t.Fatal(err)
	}
	return y
}
