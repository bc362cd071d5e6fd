//go:build linux

package operator

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"testing"
	"text/template"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testpki"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// clientCN is the subject of the client certificate the gateway presents upstream.
const clientCN = "portcullis-egress-client"

// fixture is what the YAML templates read: two namespaces, one Gateway, two mTLS
// Backends on loopback upstreams and a weighted HTTPRoute between them.
type fixture struct {
	GatewayNS, AppNS        string
	Port                    uint32 // the Gateway's HTTP listener
	RouteHost               string // the Host clients send
	AlphaHost, BetaHost     string // the Backends' FQDNs, answered by the DNS server
	AlphaAltHost            string // a second name on alpha's certificate, for SNI edits
	AlphaPort, BetaPort     uint32
	AlphaWeight, BetaWeight int
	CA                      []byte // signs the upstreams' server certificates
	ClientCert, ClientKey   []byte
}

// world is one manager process with one Gateway, programmed through kubectl.
type world struct {
	fx          fixture
	mgr         *manager
	dns         *dnstest.Server
	alpha, beta *testupstream.Server
	probes      probeCounter
}

// startWorld starts two mTLS upstreams (each requiring the client certificate), a DNS
// server answering the Backends' names with 127.0.0.1 and a manager; applies the world's
// objects with kubectl; and waits with `kubectl wait` until the Gateway and the
// Backends with a share of the traffic are Programmed. name keeps the world's
// namespaces and hosts apart from those of other tests sharing the API server.
func startWorld(t *testing.T, name string, alphaWeight, betaWeight int) *world {
	t.Helper()
	w := &world{fx: newFixture(t, name, alphaWeight, betaWeight), dns: dnstest.NewServer(t)}
	w.startUpstreams(t)
	for _, host := range []string{w.fx.AlphaHost, w.fx.BetaHost} {
		w.dns.Set(host, host+". 60 IN A 127.0.0.1")
	}
	mustKubectl(t, render(t, classYAML+"---"+namespacesYAML, w.fx), "apply", "-f", "-")
	objects := render(t, worldYAML, w.fx)
	// Registered before the manager starts so it runs after the manager stopped (cleanups
	// run last-in first-out): every test proves SIGTERM stops a live Gateway's Envoy.
	t.Cleanup(func() {
		if out, err := kubectl(t, objects, "delete", "--ignore-not-found", "--wait=false", "-f", "-"); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	})
	w.mgr = startManager(t, w.dns.Addr())
	mustKubectl(t, objects, "apply", "-f", "-")
	waitProgrammed(t, w.fx.GatewayNS, "gateway/egress")
	// A backendRef of weight 0 sends nothing, and its Backend counts as not referenced.
	if alphaWeight > 0 {
		waitProgrammed(t, w.fx.AppNS, "backend/alpha")
	}
	if betaWeight > 0 {
		waitProgrammed(t, w.fx.AppNS, "backend/beta")
	}
	return w
}

func newFixture(t *testing.T, name string, alphaWeight, betaWeight int) fixture {
	domain := name + ".operator.test"
	return fixture{
		GatewayNS: name + "-gw", AppNS: name + "-apps", Port: xdstest.FreePort(t), RouteHost: "egress." + domain,
		AlphaHost: "alpha." + domain, BetaHost: "beta." + domain, AlphaAltHost: "alpha-alt." + domain,
		AlphaWeight: alphaWeight, BetaWeight: betaWeight,
	}
}

// startUpstreams issues the certificates and starts both upstreams; only a client
// certificate from the client CA gets through their handshake.
func (w *world) startUpstreams(t *testing.T) {
	t.Helper()
	serverCA := testpki.NewCA(t, "operator test upstream CA")
	clientCA := testpki.NewCA(t, "operator test client CA")
	client := clientCA.Issue(t, testpki.Options{CommonName: clientCN, Client: true})
	w.fx.CA, w.fx.ClientCert, w.fx.ClientKey = serverCA.CertPEM, client.CertPEM, client.KeyPEM
	alphaCert := serverCA.Issue(t, testpki.Options{CommonName: "alpha", DNSNames: []string{w.fx.AlphaHost, w.fx.AlphaAltHost}})
	betaCert := serverCA.Issue(t, testpki.Options{CommonName: "beta", DNSNames: []string{w.fx.BetaHost}})
	w.alpha = testupstream.Start(t, testupstream.Options{Name: "alpha", Certificate: &alphaCert.TLS, ClientCAs: clientCA.Pool()})
	w.beta = testupstream.Start(t, testupstream.Options{Name: "beta", Certificate: &betaCert.TLS, ClientCAs: clientCA.Pool()})
	w.fx.AlphaPort, w.fx.BetaPort = w.alpha.Port(), w.beta.Port()
}

// render expands a YAML template over the fixture.
func render(t *testing.T, tmpl string, fx fixture) string {
	t.Helper()
	funcs := template.FuncMap{
		"b64":   func(b []byte) string { return base64.StdEncoding.EncodeToString(b) },
		"quote": func(b []byte) string { return fmt.Sprintf("%q", b) },
	}
	parsed, err := template.New("yaml").Funcs(funcs).Parse(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := parsed.Execute(&buf, fx); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// classYAML is the GatewayClass every world shares; it is applied, never deleted.
const classYAML = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.io/gateway-controller}
`

// namespacesYAML are the world's namespaces. They are never deleted: the test API
// server has no namespace controller, so a deleted namespace stays terminating and
// refuses new objects when the test runs again (go test -count).
const namespacesYAML = `
apiVersion: v1
kind: Namespace
metadata: {name: {{.GatewayNS}}}
---
apiVersion: v1
kind: Namespace
metadata: {name: {{.AppNS}}}
`

// worldYAML is what a user would apply: a Gateway, the CA and client certificate, two
// FQDN Backends originating mTLS, and a weighted HTTPRoute.
const worldYAML = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: {{.GatewayNS}}}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: {{.Port}}, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: upstream-ca, namespace: {{.AppNS}}}
data: {ca.crt: {{quote .CA}}}
---
apiVersion: v1
kind: Secret
metadata: {name: client-cert, namespace: {{.AppNS}}}
type: kubernetes.io/tls
data: {tls.crt: {{b64 .ClientCert}}, tls.key: {{b64 .ClientKey}}}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: alpha, namespace: {{.AppNS}}}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: {{.AlphaHost}}
      tls:
        caCertificates: [{secretRef: {name: upstream-ca, kind: ConfigMap}}]
        clientCertificate: {secretRef: {name: client-cert}}
    ports: [{name: https, port: {{.AlphaPort}}, protocol: HTTPS}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: beta, namespace: {{.AppNS}}}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: {{.BetaHost}}
      tls:
        caCertificates: [{secretRef: {name: upstream-ca, kind: ConfigMap}}]
        clientCertificate: {secretRef: {name: client-cert}}
    ports: [{name: https, port: {{.BetaPort}}, protocol: HTTPS}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: split, namespace: {{.AppNS}}}
spec:
  parentRefs: [{name: egress, namespace: {{.GatewayNS}}}]
  hostnames: [{{.RouteHost}}]
  rules:
  - backendRefs:
    - {group: egress.portcullis.io, kind: Backend, name: alpha, weight: {{.AlphaWeight}}}
    - {group: egress.portcullis.io, kind: Backend, name: beta, weight: {{.BetaWeight}}}
`
