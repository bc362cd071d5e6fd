package e2e

import (
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/internal/testpki"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// scenario is the data the YAML templates of a test read.
type scenario struct {
	Port, UpPort          uint32
	Name, Host            string
	CA                    []byte
	ClientCert, ClientKey []byte
	Extra                 string
}

// fqdnBackendYAML is an FQDN Backend on the upstream's port; .Extra is appended to its tls block.
const fqdnBackendYAML = `
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: {{.Name}}, namespace: apps}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: {{.Host}}
      tls:
        caCertificates: [{secretRef: {name: upstream-ca, kind: ConfigMap}}]{{.Extra}}
    ports: [{name: https, port: {{.UpPort}}, protocol: HTTPS}]
`

func TestFQDNBackendOriginatesTLSWithSNI(t *testing.T) {
	ca := testpki.NewCA(t, "e2e upstream CA")
	server := ca.Issue(t, testpki.Options{CommonName: "api", DNSNames: []string{"api.e2e.test"}})
	up := testupstream.Start(t, testupstream.Options{Certificate: &server.TLS, Name: "api"})
	d := startDataPath(t)
	s := scenario{Port: d.port, UpPort: up.Port(), Name: "api", Host: "api.e2e.test", CA: ca.CertPEM}
	d.apply(gatewayYAML+routeYAML+fqdnBackendYAML+caConfigMapYAML, s, resolved("api.e2e.test", "127.0.0.1"))

	body := d.eventually(200, "api.e2e.test", "/v1/models")
	if !strings.Contains(body, "hello from api") {
		t.Fatalf("body = %q, want the upstream's answer", body)
	}
	seen := up.Requests()
	last := seen[len(seen)-1]
	if !last.TLS || last.SNI != "api.e2e.test" || last.Path != "/v1/models" {
		t.Fatalf("upstream saw %+v; want TLS with SNI api.e2e.test and path /v1/models", last)
	}
}

func TestClientCertificateIsPresentedAndRequired(t *testing.T) {
	ca := testpki.NewCA(t, "e2e upstream CA")
	server := ca.Issue(t, testpki.Options{CommonName: "api", DNSNames: []string{"mtls.e2e.test"}})
	client := ca.Issue(t, testpki.Options{CommonName: "portcullis-egress", Client: true})
	up := testupstream.Start(t, testupstream.Options{Certificate: &server.TLS, ClientCAs: ca.Pool(), Name: "mtls"})
	d := startDataPath(t)
	with := scenario{Port: d.port, UpPort: up.Port(), Name: "with-cert", Host: "mtls.e2e.test", CA: ca.CertPEM, ClientCert: client.CertPEM, ClientKey: client.KeyPEM,
		Extra: "\n        clientCertificate: {secretRef: {name: client-cert}}"}
	without := with
	without.Name, without.Extra = "without-cert", ""
	without.Host = "mtls.e2e.test"
	yaml := gatewayYAML + fqdnBackendYAML + caConfigMapYAML + clientSecretYAML + `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: split, namespace: apps}
spec:
  parentRefs: [{name: egress, namespace: gw}]
  hostnames: [mtls.e2e.test]
  rules:
  - matches: [{path: {type: PathPrefix, value: /with}}]
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: with-cert}]
  - matches: [{path: {type: PathPrefix, value: /without}}]
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: without-cert}]
`
	d.apply(yaml+renderTo(t, fqdnBackendYAML, without), with, resolved("mtls.e2e.test", "127.0.0.1"))

	d.eventually(200, "mtls.e2e.test", "/with")
	for _, s := range up.Requests() {
		if s.ClientCN != "portcullis-egress" {
			t.Fatalf("upstream saw client certificate %q, want portcullis-egress", s.ClientCN)
		}
	}
	before := len(up.Requests())
	if code, body, _ := d.get("mtls.e2e.test", "/without"); code < 500 {
		t.Fatalf("without a client certificate: got %d %q, want a 5xx", code, body)
	}
	if n := len(up.Requests()); n != before {
		t.Fatalf("a request without a client certificate reached the upstream")
	}
}

func TestWrongCAOrSANFailsClosed(t *testing.T) {
	ca := testpki.NewCA(t, "e2e upstream CA")
	other := testpki.NewCA(t, "someone else's CA")
	server := ca.Issue(t, testpki.Options{CommonName: "api", DNSNames: []string{"api.e2e.test"}})
	up := testupstream.Start(t, testupstream.Options{Certificate: &server.TLS, Name: "api"})
	tests := []struct {
		name  string
		ca    []byte
		extra string
	}{
		{name: "a CA that did not sign the upstream's certificate", ca: other.CertPEM},
		{name: "a SAN the upstream's certificate does not carry", ca: ca.CertPEM, extra: "\n        subjectAltNames: [{type: Hostname, hostname: billing.e2e.test}]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := startDataPath(t)
			s := scenario{Port: d.port, UpPort: up.Port(), Name: "api", Host: "api.e2e.test", CA: tt.ca, Extra: tt.extra}
			d.apply(gatewayYAML+routeYAML+fqdnBackendYAML+caConfigMapYAML, s, resolved("api.e2e.test", "127.0.0.1"))
			before := len(up.Requests())
			for i := 0; i < 3; i++ {
				if code, body, _ := d.get("api.e2e.test", "/"); code < 500 {
					t.Fatalf("got %d %q, want a 5xx", code, body)
				}
			}
			if n := len(up.Requests()); n != before {
				t.Fatalf("%d requests reached the upstream despite failed verification", n-before)
			}
		})
	}
}

func TestServiceDestinationMergesBackendTLSPolicyWithClientCertificate(t *testing.T) {
	ca := testpki.NewCA(t, "billing CA")
	server := ca.Issue(t, testpki.Options{CommonName: "billing", DNSNames: []string{"billing.internal.e2e"}})
	client := ca.Issue(t, testpki.Options{CommonName: "billing-consumer", Client: true})
	up := testupstream.Start(t, testupstream.Options{Certificate: &server.TLS, ClientCAs: ca.Pool(), Name: "billing"})
	d := startDataPath(t)
	s := scenario{Port: d.port, UpPort: up.Port(), Name: "billing", Host: "billing.e2e.test", CA: ca.CertPEM, ClientCert: client.CertPEM, ClientKey: client.KeyPEM}
	d.apply(gatewayYAML+routeYAML+caConfigMapYAML+clientSecretYAML+`
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: billing, namespace: apps}
spec:
  destination:
    type: Service
    kubernetesService:
      name: billing
      tls:
        serverName: ignored.e2e.test
        clientCertificate: {secretRef: {name: client-cert}}
    ports: [{name: https, port: 443, protocol: HTTP}]
---
apiVersion: v1
kind: Service
metadata: {name: billing, namespace: apps}
spec: {ports: [{name: https, port: 443, targetPort: {{.UpPort}}}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: billing-1, namespace: apps, labels: {kubernetes.io/service-name: billing}}
addressType: IPv4
ports: [{name: https, port: {{.UpPort}}}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: billing-tls, namespace: apps}
spec:
  targetRefs: [{group: "", kind: Service, name: billing}]
  validation:
    hostname: billing.internal.e2e
    caCertificateRefs: [{group: "", kind: ConfigMap, name: upstream-ca}]
`, s, nil)

	d.eventually(200, "billing.e2e.test", "/invoices")
	last := up.Requests()[len(up.Requests())-1]
	if last.SNI != "billing.internal.e2e" || last.ClientCN != "billing-consumer" {
		t.Fatalf("upstream saw SNI %q and client %q; want the policy's hostname and the Backend's client certificate", last.SNI, last.ClientCN)
	}
}
