package controllers

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testpki"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// TestXBackend: the manager watches XBackends only when their CRD is served. With the
// CRD installed, an HTTPRoute sends to an XBackend of mode ClientAndServer: its parent
// entry is Accepted, the route's refs resolve, and a request reaches a local TLS
// upstream through a real Envoy, verified with the XBackend's CA and presenting its
// client certificate, at the address the DNS guard vetted. An XBackend naming a
// Service's name is refused naming the field, and routes to it get ResolvedRefs=False.
// Our parent entries go when no route references the XBackend; another controller's stay.
func TestXBackend(t *testing.T) {
	if servedNow(t) {
		t.Fatal("the XBackend CRD is served before the test installed it: StartAPIServer must not install it")
	}
	uninstall, err := api.InstallXBackendCRD()
	if err != nil {
		t.Fatalf("installing the XBackend CRD: %v", err)
	}
	// Registered before the world, so it runs after the world's manager stopped.
	t.Cleanup(func() {
		if err := uninstall(); err != nil {
			t.Errorf("uninstalling the XBackend CRD: %v", err)
		}
	})
	if !servedNow(t) {
		t.Fatal("the XBackend CRD is installed but a new manager does not see it served")
	}

	const ns, host = "xb", "api.xb.test"
	ca := testpki.NewCA(t, "xbackend-ca")
	server := ca.Issue(t, testpki.Options{CommonName: host, DNSNames: []string{host}})
	up := testupstream.Start(t, testupstream.Options{Name: "xbackend", Certificate: &server.TLS, ClientCAs: ca.Pool(), ServerName: host})
	w := newWorld(t)
	w.port = xdstest.FreePort(t)
	w.envoy = w.startEnvoy(ns + "/egress")
	w.dns.Set(host, host+". 300 IN A 127.0.0.1")
	w.apply(render(t, xbackendWorldYAML, map[string]any{"NS": ns, "Host": host, "Port": w.port, "UpPort": up.Port(),
		"CA": ca.CertPEM, "Client": ca.Issue(t, testpki.Options{CommonName: "xbackend-client", Client: true})}))

	waitWants(t, w, []want{
		on("XBackend", ns, "api").at("egress").is("Accepted=True/Accepted").with("server verified with spec.tls.validation.caCertificateRefs", "client certificate from Secret client"),
		on("XBackend", ns, "api").at("egress").is("portcullis.io/AddressesResolved=True/Resolved"),
		on("HTTPRoute", ns, "r").at("egress").is("ResolvedRefs=True/ResolvedRefs"),
		on("XBackend", ns, "internal").at("egress").is("Accepted=False/ForbiddenDestination").with("spec.externalHostname.hostname db.xb.svc"),
		on("HTTPRoute", ns, "bad").at("egress").is("ResolvedRefs=False/InvalidBackend").with("XBackend xb/internal cannot be used"),
	}, 30*time.Second)

	seen := getThrough(t, up, w.port, host)
	if !seen.TLS || seen.SNI != host || seen.ClientCN != "xbackend-client" {
		t.Errorf("the upstream saw TLS %v, SNI %q, client certificate %q; want TLS, %q, xbackend-client", seen.TLS, seen.SNI, seen.ClientCN, host)
	}

	writeForeignXBackendParent(t, w, types.NamespacedName{Namespace: ns, Name: "api"})
	remove(t, w, &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns}})
	waitWants(t, w, []want{
		on("XBackend", ns, "api").at("egress").is("none"),
		on("XBackend", ns, "api").where("keeps the foreign parent entry", hasForeignXBackendParent),
	}, 20*time.Second)
}

const xbackendWorldYAML = `
apiVersion: v1
kind: Namespace
metadata: {name: {{.NS}}}
---
` + portcullisClassYAML + `---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: {{.NS}}}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: {{.Port}}, protocol: HTTP}]
---
apiVersion: v1
kind: Secret
metadata: {name: client, namespace: {{.NS}}}
type: kubernetes.io/tls
data: {tls.crt: {{b64 .Client.CertPEM}}, tls.key: {{b64 .Client.KeyPEM}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: {{.NS}}}
data: {ca.crt: {{quote .CA}}}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: api, namespace: {{.NS}}}
spec:
  type: ExternalHostname
  externalHostname: {hostname: {{.Host}}}
  port: {port: {{.UpPort}}}
  protocol: HTTP11
  tls:
    mode: ClientAndServer
    clientCertificateRef: {name: client}
    validation:
      hostname: {{.Host}}
      caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: internal, namespace: {{.NS}}}
spec:
  type: ExternalHostname
  externalHostname: {hostname: db.{{.NS}}.svc}
  port: {port: 5432}
  tls: {mode: None}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: {{.NS}}}
spec:
  parentRefs: [{name: egress}]
  hostnames: [{{.Host}}]
  rules: [{backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: api}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: bad, namespace: {{.NS}}}
spec:
  parentRefs: [{name: egress}]
  hostnames: [internal.{{.NS}}.test]
  rules: [{backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: internal}]}]
`

// servedNow asks, as a manager starting now would, whether the XBackend CRD is served.
func servedNow(t *testing.T) bool {
	t.Helper()
	mgr, err := ctrl.NewManager(api.Config, ctrl.Options{Scheme: api.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	served, err := xbackendServed(mgr)
	if err != nil {
		t.Fatal(err)
	}
	return served
}

// getThrough sends GET / for host through the Envoy on port until the upstream answers,
// and returns what the upstream saw of it.
func getThrough(t *testing.T, up *testupstream.Server, port uint32, host string) testupstream.Seen {
	t.Helper()
	xdstest.WaitFor(t, 20*time.Second, "a request to "+host+" through Envoy", func() error {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
		req.Host = host
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "xbackend") {
			return fmt.Errorf("status %d: %s", resp.StatusCode, body)
		}
		return nil
	})
	seen := up.Requests()
	return seen[len(seen)-1]
}

func writeForeignXBackendParent(t *testing.T, w *world, key types.NamespacedName) {
	t.Helper()
	updateStatus(t, w, &gwapixv1alpha1.XBackend{}, key, func(o client.Object) {
		x := o.(*gwapixv1alpha1.XBackend)
		x.Status.Ancestors = append(x.Status.Ancestors, gwapixv1alpha1.BackendAncestorStatus{
			AncestorRef: gwapiv1.ParentReference{Name: "their-gw"}, ControllerName: foreignController, Conditions: foreignConditions()})
	})
}

func hasForeignXBackendParent(o client.Object) error {
	for _, p := range o.(*gwapixv1alpha1.XBackend).Status.Ancestors {
		if p.AncestorRef.Name == "their-gw" && p.ControllerName == foreignController && len(p.Conditions) == 1 && p.Conditions[0].Message == "theirs" {
			return nil
		}
	}
	return fmt.Errorf("no foreign parent entry in %+v", o.(*gwapixv1alpha1.XBackend).Status.Ancestors)
}
