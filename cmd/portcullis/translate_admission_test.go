package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// refusedObjects are objects a real kube-apiserver refuses, each for one reason (so the
// message has one cause and a fixed order), between objects it accepts.
const refusedObjects = `apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: fine, namespace: apps}
spec: {destination: {type: FQDN, fqdn: {hostname: api.example.com}, ports: [{name: https, port: 443, protocol: HTTPS}]}}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: ip-as-hostname, namespace: apps}
spec: {destination: {type: FQDN, fqdn: {hostname: 203.0.113.10}, ports: [{name: https, port: 443, protocol: HTTPS}]}}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: misspelt, namespace: apps}
spec: {destination: {type: FQDN, fqdn: {hostname: api.example.com, servername: api.example.com}, ports: [{name: https, port: 443, protocol: HTTPS}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: no-domain}
spec: {controllerName: gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: tcp-with-hostname, namespace: apps}
spec: {gatewayClassName: portcullis, listeners: [{name: tcp, protocol: TCP, port: 5432, hostname: db.example.com}]}
---
apiVersion: v1
kind: List
items:
- apiVersion: gateway.networking.k8s.io/v1
  kind: HTTPRoute
  metadata: {name: prefix-without-slash, namespace: apps}
  spec: {parentRefs: [{name: egress}], rules: [{matches: [{path: {type: PathPrefix, value: api}}]}]}
`

// TestTranslateRefusesWhatKubectlApplyRefuses applies a file with kubectl to a real API
// server and translates the same file: translate must print exactly the lines kubectl
// printed for the refused objects, in the same order, and translate nothing.
func TestTranslateRefusesWhatKubectlApplyRefuses(t *testing.T) {
	kubectl := testenv.KubectlBinary(t)
	kubeconfig := startAPIServer(t)
	file := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(file, []byte(refusedObjects), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-f", file).CombinedOutput()
	if err == nil {
		t.Fatalf("kubectl apply succeeded; the file must hold refused objects:\n%s", out)
	}
	want := serverErrors(string(out))
	if len(want) != 5 {
		t.Fatalf("kubectl apply printed %d refusals, want 5 (one per invalid object):\n%s", len(want), out)
	}

	var stdout, stderr bytes.Buffer
	if code := run([]string{"translate", "-f", file}, &stdout, &stderr); code != 1 {
		t.Fatalf("translate exit code %d, want 1; stderr:\n%s", code, stderr.String())
	}
	if got := serverErrors(stderr.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("translate's refusals differ from kubectl apply's\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if stdout.Len() != 0 {
		t.Errorf("translate printed a translation of refused input:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "the API server would refuse 5 object(s)") {
		t.Errorf("stderr does not sum up the refusals:\n%s", stderr.String())
	}
}

// serverErrors returns the lines of kubectl output that report a refusal.
func serverErrors(out string) []string {
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Error from server") {
			lines = append(lines, line)
		}
	}
	return lines
}

// TestTranslateValidatesXBackendsWithTheExperimentalCRD: an XBackend is checked against
// the experimental CRD (which `portcullis local` does not install) like every other
// input: a bad type is refused with the API server's words, a good XBackend passes.
func TestTranslateValidatesXBackendsWithTheExperimentalCRD(t *testing.T) {
	const xbackend = `apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: mail, namespace: apps}
spec: {type: %s, externalHostname: {hostname: smtp.example.com}, port: {port: 465}}
`
	for _, tc := range []struct {
		typ      string
		wantCode int
		wantErr  string
	}{
		{"ExternalHostname", 0, ""},
		{"Nope", 1, `spec.type: Unsupported value: "Nope": supported values: "ExternalHostname"`},
	} {
		file := filepath.Join(t.TempDir(), "xbackend.yaml")
		if err := os.WriteFile(file, []byte(strings.Replace(xbackend, "%s", tc.typ, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if code := run([]string{"translate", "-f", file}, &stdout, &stderr); code != tc.wantCode || !strings.Contains(stderr.String(), tc.wantErr) {
			t.Errorf("type %s: exit code %d, stderr:\n%s\nwant code %d and %q", tc.typ, code, stderr.String(), tc.wantCode, tc.wantErr)
		}
	}
}
