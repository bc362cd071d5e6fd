package v1alpha1_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// TestKubectlExplainShowsFieldDocs runs the real kubectl against the test API server: the
// doc comments on the Go types are what users read with `kubectl explain`.
func TestKubectlExplainShowsFieldDocs(t *testing.T) {
	kubectl := testenv.KubectlBinary(t)
	kubeconfig, err := api.Kubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wants := []string{
		"FIELD: tls <Object>",
		"tls originates TLS to the destination",
		"caCertificates\t<[]Object>",
		"clientCertificate\t<Object>",
		"insecureSkipVerify\t<boolean>",
		"subjectAltNames\t<[]Object>",
		"wellKnownCACertificates\t<string>",
		"enum: System",
	}
	// The API server publishes a CRD's OpenAPI a moment after the CRD is established.
	var out string
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "explain", "backends.spec.destination.fqdn.tls").CombinedOutput()
		out = string(b)
		if err == nil && containsAll(out, wants) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain output lacks %q:\n%s", want, out)
		}
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
