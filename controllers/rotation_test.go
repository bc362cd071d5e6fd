package controllers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testpki"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// testRotation: replacing the data of a Backend's client-certificate Secret changes the
// certificate Envoy presents upstream, with no change to the Backend. The upstream
// requires mutual TLS and closes every connection, so each request is a new handshake.
func testRotation(t *testing.T, w *world) {
	const ns, host = "rotation", "rotation.suite.test"
	ca := testpki.NewCA(t, "rotation-ca")
	server := ca.Issue(t, testpki.Options{CommonName: host, DNSNames: []string{host}})
	first := ca.Issue(t, testpki.Options{CommonName: "client-one", Client: true})
	second := ca.Issue(t, testpki.Options{CommonName: "client-two", Client: true})
	up := testupstream.Start(t, testupstream.Options{Name: "rotation", Certificate: &server.TLS, ClientCAs: ca.Pool(), CloseConnections: true})
	w.dns.Set(host, host+". 300 IN A 127.0.0.1")

	port := xdstest.FreePort(t)
	w.startEnvoy(ns + "/gw")
	w.namespace(ns)
	w.apply(render(t, snippets+`{{template "gw" .}}
---
apiVersion: v1
kind: Secret
metadata: {name: client, namespace: {{.NS}}}
type: kubernetes.io/tls
data: {tls.crt: {{b64 .Client.CertPEM}}, tls.key: {{b64 .Client.KeyPEM}}}
---
{{template "ca" .}}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: {{.NS}}}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: `+host+`
      tls:
        caCertificates: [{secretRef: {name: ca, kind: ConfigMap}}]
        clientCertificate: {secretRef: {name: client}}
    ports: [{name: https, port: `+fmt.Sprint(up.Port())+`, protocol: HTTPS}]
---`+routeYAML(ns, "r", "b"), caseData{suitePKI: suitePKI{CA: ca.CertPEM, Client: first}, NS: ns, Class: suiteClass, Port: port}))
	waitWants(t, w, []want{on("Backend", ns, "b").is("Programmed=True/Programmed")}, 30*time.Second)
	waitClientCN(t, up, port, host, "client-one")

	backend := &egressv1alpha1.Backend{}
	bkey := types.NamespacedName{Namespace: ns, Name: "b"}
	if err := w.c.Get(context.Background(), bkey, backend); err != nil {
		t.Fatal(err)
	}
	generation := backend.Generation
	bump(t, w, &corev1.Secret{}, types.NamespacedName{Namespace: ns, Name: "client"}, func(o client.Object) {
		o.(*corev1.Secret).Data = map[string][]byte{corev1.TLSCertKey: second.CertPEM, corev1.TLSPrivateKeyKey: second.KeyPEM}
	})
	waitClientCN(t, up, port, host, "client-two")
	// Only the Secret was edited; the Backend's spec is the same, and it is Programmed
	// again once Envoy acknowledged the new secret.
	waitWants(t, w, []want{on("Backend", ns, "b").is("Programmed=True/Programmed")}, 20*time.Second)
	if err := w.c.Get(context.Background(), bkey, backend); err != nil {
		t.Fatal(err)
	}
	if backend.Generation != generation {
		t.Errorf("the Backend's generation moved %d -> %d; only its Secret was edited", generation, backend.Generation)
	}
}

// waitClientCN sends requests through Envoy until the upstream saw the client
// certificate of that common name.
func waitClientCN(t *testing.T, up *testupstream.Server, port uint32, host, cn string) {
	t.Helper()
	xdstest.WaitFor(t, 20*time.Second, "the upstream to see client certificate "+cn, func() error {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
		req.Host = host
		resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %s", resp.StatusCode, body)
		}
		seen := up.Requests()
		if got := seen[len(seen)-1].ClientCN; got != cn {
			return fmt.Errorf("the upstream saw client certificate %q", got)
		}
		return nil
	})
}
