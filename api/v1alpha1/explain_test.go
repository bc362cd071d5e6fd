package v1alpha1_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// TestKubectlExplainShowsFieldDocs runs the real kubectl against the test API server: the
// doc comments on the Go types are what users read with `kubectl explain`, including
// the config keys of every extension type, which the schema itself cannot show.
func TestKubectlExplainShowsFieldDocs(t *testing.T) {
	kubectl := testenv.KubectlBinary(t)
	kubeconfig, err := api.Kubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var extensionWants []string
	for typ, keys := range translate.ExtensionKeys() {
		extensionWants = append(extensionWants, typ+":")
		extensionWants = append(extensionWants, keys...)
	}
	tests := []struct {
		field string
		wants []string
	}{
		{field: "backends.spec.destination.fqdn.tls", wants: []string{
			"FIELD: tls <Object>",
			"tls originates TLS to the destination",
			"caCertificates\t<[]Object>",
			"clientCertificate\t<Object>",
			"insecureSkipVerify\t<boolean>",
			"subjectAltNames\t<[]Object>",
			"wellKnownCACertificates\t<string>",
			"enum: System",
		}},
		{field: "backends.spec.extensions.config", wants: extensionWants},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			out := explain(t, kubectl, kubeconfig, tt.field, tt.wants)
			for _, want := range tt.wants {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl explain output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// explain runs kubectl explain until its output has every want or 30 s passed: the API
// server publishes a CRD's OpenAPI a moment after the CRD is established.
func explain(t *testing.T, kubectl, kubeconfig, field string, wants []string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "explain", field).CombinedOutput()
		if err == nil && containsAll(string(b), wants) || time.Now().After(deadline) {
			return string(b)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
