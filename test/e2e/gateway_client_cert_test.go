package e2e

import (
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/internal/testpki"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// gatewayWithClientCertYAML is gatewayYAML with spec.tls.backend.clientCertificateRef
// naming the Secret gateway-client.
var gatewayWithClientCertYAML = strings.Replace(gatewayYAML, "  gatewayClassName: portcullis\n",
	"  gatewayClassName: portcullis\n  tls:\n    backend:\n      clientCertificateRef: {name: gateway-client}\n", 1) + `
---
apiVersion: v1
kind: Secret
metadata: {name: gateway-client, namespace: gw}
type: kubernetes.io/tls
data: {tls.crt: {{b64 .GatewayCert}}, tls.key: {{b64 .GatewayKey}}}
`

// TestGatewayClientCertificateIsPresentedToBackends: an mTLS upstream requiring a client
// certificate accepts a Backend that names none, because the Gateway presents its
// spec.tls.backend certificate; a Backend naming its own presents that one instead.
func TestGatewayClientCertificateIsPresentedToBackends(t *testing.T) {
	ca := testpki.NewCA(t, "e2e upstream CA")
	server := ca.Issue(t, testpki.Options{CommonName: "api", DNSNames: []string{"mtls.e2e.test"}})
	gatewayClient := ca.Issue(t, testpki.Options{CommonName: "gateway-wide", Client: true})
	backendClient := ca.Issue(t, testpki.Options{CommonName: "per-backend", Client: true})
	up := testupstream.Start(t, testupstream.Options{Certificate: &server.TLS, ClientCAs: ca.Pool(), Name: "mtls"})
	d := startDataPath(t)
	data := struct {
		scenario
		GatewayCert, GatewayKey []byte
	}{scenario: scenario{Port: d.port, UpPort: up.Port(), Name: "own", Host: "mtls.e2e.test", CA: ca.CertPEM,
		ClientCert: backendClient.CertPEM, ClientKey: backendClient.KeyPEM,
		Extra: "\n        clientCertificate: {secretRef: {name: client-cert}}"}, GatewayCert: gatewayClient.CertPEM, GatewayKey: gatewayClient.KeyPEM}
	plain := data.scenario
	plain.Name, plain.Extra = "plain", ""
	yaml := gatewayWithClientCertYAML + fqdnBackendYAML + caConfigMapYAML + clientSecretYAML + renderTo(t, fqdnBackendYAML, plain) + `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: split, namespace: apps}
spec:
  parentRefs: [{name: egress, namespace: gw}]
  hostnames: [mtls.e2e.test]
  rules:
  - matches: [{path: {type: PathPrefix, value: /plain}}]
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: plain}]
  - matches: [{path: {type: PathPrefix, value: /own}}]
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: own}]
`
	d.apply(yaml, data, resolved("mtls.e2e.test", "127.0.0.1"))

	for _, tt := range []struct{ path, wantCN string }{{"/plain", "gateway-wide"}, {"/own", "per-backend"}} {
		d.eventually(200, "mtls.e2e.test", tt.path)
		seen := up.Requests()
		if last := seen[len(seen)-1]; last.Path != tt.path || last.ClientCN != tt.wantCN {
			t.Errorf("%s: upstream saw path %q with client certificate %q, want %q", tt.path, last.Path, last.ClientCN, tt.wantCN)
		}
	}
}
