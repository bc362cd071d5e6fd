package controllers

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/internal/testpki"
)

// testRobustness: bad Secrets and references become conditions naming the field and
// the object, the manager keeps reconciling, and no key material reaches the logs.
func testRobustness(t *testing.T, w *world, pki suitePKI) {
	const ns = "robust"
	other := testpki.NewCA(t, "other-ca").Issue(t, testpki.Options{CommonName: "other", Client: true})
	backend := func(name, tls string) string {
		return fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: %[1]s, namespace: {{.NS}}}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: %[1]s.suite.test
      tls: %[2]s
    ports: [{name: https, port: 443, protocol: HTTPS}]
---`, name, tls) + routeYAML("{{.NS}}", name, name)
	}
	secret := func(name, typ string, cert, key []byte) string {
		return fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: %s, namespace: {{.NS}}}
type: %s
data: {tls.crt: %s, tls.key: %s}
`, name, typ, base64.StdEncoding.EncodeToString(cert), base64.StdEncoding.EncodeToString(key))
	}
	clientCert := func(secretName string) string { return "{clientCertificate: {secretRef: {name: " + secretName + "}}}" }
	docs := []string{`{{template "gw" .}}`,
		secret("opaque", "Opaque", pki.Client.CertPEM, pki.Client.KeyPEM),
		secret("garbage", "kubernetes.io/tls", []byte("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n"), []byte("junk")),
		secret("mismatched", "kubernetes.io/tls", pki.Client.CertPEM, other.KeyPEM),
		secret("expired", "kubernetes.io/tls", pki.Expired.CertPEM, pki.Expired.KeyPEM), `
apiVersion: v1
kind: ConfigMap
metadata: {name: not-pem, namespace: {{.NS}}}
data: {ca.crt: "this is not a certificate"}
`,
		backend("missing", clientCert("absent")),
		backend("wrong-type", clientCert("opaque")),
		backend("malformed", clientCert("garbage")),
		backend("mismatched", clientCert("mismatched")),
		backend("expired", clientCert("expired")),
		backend("bad-ca", "{caCertificates: [{secretRef: {name: not-pem, kind: ConfigMap}}]}"), `
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: no-service, namespace: {{.NS}}}
spec:
  destination:
    type: Service
    kubernetesService: {name: nope}
    ports: [{name: http, port: 80, protocol: HTTP}]
`, routeYAML("{{.NS}}", "no-service", "no-service"), `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: expired-listener, namespace: {{.NS}}}
spec:
  gatewayClassName: {{.Class}}
  listeners: [{name: https, port: 8443, protocol: HTTPS, tls: {certificateRefs: [{name: expired}]}}]
`}
	objs := w.applyCase(conditionCase{name: "bad inputs", ns: ns, yaml: strings.Join(docs, "\n---\n")}, pki)
	b := func(name string) want { return on("Backend", ns, name) }
	invalidCert := "ResolvedRefs=False/InvalidCertificateRef"
	wants := []want{
		b("missing").is(invalidCert).with("tls.clientCertificate: Secret " + ns + "/absent not found"),
		b("wrong-type").is(invalidCert).with("tls.clientCertificate: Secret "+ns+"/opaque", `type "Opaque"`, "kubernetes.io/tls"),
		b("malformed").is(invalidCert).with("tls.clientCertificate: Secret "+ns+"/garbage", "not a valid PEM key pair"),
		b("mismatched").is(invalidCert).with("tls.clientCertificate: Secret "+ns+"/mismatched", "not a valid PEM key pair"),
		b("expired").is(invalidCert).with("tls.clientCertificate: Secret "+ns+"/expired", "expired at"),
		b("bad-ca").is("ResolvedRefs=False/InvalidCACertificateRef").with("tls.caCertificates[0]: ConfigMap "+ns+"/not-pem key ca.crt", "no PEM certificate"),
		b("no-service").is("ResolvedRefs=False/ServiceNotFound").with("Service " + ns + "/nope not found"),
		on("HTTPRoute", ns, "expired").at("gw").is("ResolvedRefs=False/InvalidBackend").with("Backend "+ns+"/expired cannot be used", "expired at"),
		on("Gateway", ns, "expired-listener").at("https").is("ResolvedRefs=False/InvalidCertificateRef").with("Secret "+ns+"/expired", "expired at"),
		on("Gateway", ns, "expired-listener").is("Accepted=True/ListenersNotValid").with("1 of 1 listeners are invalid or not served"),
	}
	waitWants(t, w, wants, 30*time.Second)

	// The manager is alive and still reconciling: a good Backend created now is accepted.
	w.apply(render(t, snippets+backend("healthy", clientCert("client"))+"\n---\n"+`{{template "client" .}}`, caseData{suitePKI: pki, NS: ns, Class: suiteClass}))
	waitWants(t, w, []want{b("healthy").is("ResolvedRefs=True/ResolvedRefs"), on("HTTPRoute", ns, "healthy").at("gw").is("ResolvedRefs=True/ResolvedRefs")}, 20*time.Second)
	assertResyncWritesNothing(t, w, objs)
	assertLogsHoldNoSecrets(t, w, pki, other)
}

// assertLogsHoldNoSecrets: no private key, nor a piece of one, in anything the manager
// logged, and no panic was recovered.
func assertLogsHoldNoSecrets(t *testing.T, w *world, pki suitePKI, more ...testpki.Pair) {
	t.Helper()
	var needles []string
	for _, p := range append([]testpki.Pair{pki.Client, pki.Server, pki.Expired}, more...) {
		body := pemBody(p.KeyPEM)
		needles = append(needles, body[:40], base64.StdEncoding.EncodeToString(p.KeyPEM)[:40])
	}
	lines := w.logs.snapshot()
	for _, line := range lines {
		if strings.Contains(line, "PRIVATE KEY") || strings.Contains(strings.ToLower(line), "panic") {
			t.Errorf("log line: %.300s", line)
		}
		for _, n := range needles {
			if strings.Contains(line, n) {
				t.Errorf("a private key is in the log: %.300s", line)
			}
		}
	}
	if len(lines) == 0 {
		t.Errorf("no log line at all: the check proves nothing")
	}
}

// pemBody is the base64 text of a PEM block, without its header lines.
func pemBody(p []byte) string {
	var body []byte
	for _, line := range bytes.Split(p, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("-----")) {
			body = append(body, line...)
		}
	}
	return string(body)
}

// scaleCount is how many Backends (each with its own route) testScale creates.
const scaleCount = 1000

// TestThousandBackendsSettle creates scaleCount FQDN Backends and one route each, all at
// once (8 client goroutines), and measures how long until every Backend is Accepted with
// resolved addresses and every route is Accepted with resolved references. It has a
// world of its own and leaves its objects behind: deleting them costs the API server
// about as long as creating them, so it is meant to be the package's last envtest test
// (file order), where nothing else has to translate them.
func TestThousandBackendsSettle(t *testing.T) {
	const ns = "scale"
	w := newWorld(t, func(o *Options) { o.ControllerName = suiteController })
	w.ensure(fmt.Sprintf("{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: %s}, spec: {controllerName: %s}}", suiteClass, w.controller))
	w.namespace(ns)
	for i := range scaleCount {
		host := fmt.Sprintf("b%04d.scale.suite.test", i)
		w.dns.Set(host, host+". 300 IN A 127.0.0.1")
	}
	w.apply(render(t, snippets+`{{template "gw" .}}`, caseData{NS: ns, Class: suiteClass, Port: 8080}))
	start := time.Now()
	createScaleObjects(t, w, ns)
	created := time.Since(start)
	settled := waitScale(t, w, ns, start)
	t.Logf("%d Backends and %d HTTPRoutes: created in %v; all Accepted in %v; all settled (addresses resolved, routes resolved) in %v",
		scaleCount, scaleCount, created.Round(time.Millisecond), settled.accepted.Round(time.Millisecond), settled.all.Round(time.Millisecond))
	logReconcileDurations(t, w)

}

func createScaleObjects(t *testing.T, w *world, ns string) {
	t.Helper()
	var objs []*unstructuredObject
	for i := range scaleCount {
		objs = append(objs, decodeYAML(t, "scale", scaleYAML(ns, i))...)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(objs))
	next := make(chan *unstructuredObject)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range next {
				if err := w.c.Create(context.Background(), obj); err != nil {
					errs <- fmt.Errorf("create %s %s: %w", obj.GetKind(), obj.GetName(), err)
				}
			}
		}()
	}
	for _, obj := range objs {
		next <- obj
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func scaleYAML(ns string, i int) string {
	return fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b%04[2]d, namespace: %[1]s}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: b%04[2]d.scale.suite.test}
    ports: [{name: http, port: 9, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r%04[2]d, namespace: %[1]s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [b%04[2]d.suite.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b%04[2]d}]}]
`, ns, i)
}

type scaleTimes struct{ accepted, all time.Duration }

// waitScale lists the namespace until every object settled, and says when.
func waitScale(t *testing.T, w *world, ns string, start time.Time) scaleTimes {
	t.Helper()
	var out scaleTimes
	deadline := start.Add(3 * time.Minute)
	for {
		accepted, resolved, routes, err := scaleState(w.c, ns)
		if err != nil {
			t.Fatal(err)
		}
		if accepted == scaleCount && out.accepted == 0 {
			out.accepted = time.Since(start)
		}
		if accepted == scaleCount && resolved == scaleCount && routes == scaleCount {
			out.all = time.Since(start)
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %d of %d Backends Accepted, %d resolved, %d routes resolved", time.Since(start), accepted, scaleCount, resolved, routes)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func scaleState(c client.Client, ns string) (accepted, resolved, routes int, err error) {
	ctx := context.Background()
	var bl egressv1alpha1.BackendList
	if err := c.List(ctx, &bl, client.InNamespace(ns)); err != nil {
		return 0, 0, 0, err
	}
	for _, b := range bl.Items {
		if isTrue(b.Status.Conditions, egressv1alpha1.ConditionAccepted) {
			accepted++
		}
		if isTrue(b.Status.Conditions, egressv1alpha1.ConditionAddressesResolved) {
			resolved++
		}
	}
	var rl gwapiv1.HTTPRouteList
	if err := c.List(ctx, &rl, client.InNamespace(ns)); err != nil {
		return 0, 0, 0, err
	}
	for _, r := range rl.Items {
		if len(r.Status.Parents) == 1 && isTrue(r.Status.Parents[0].Conditions, "Accepted") && isTrue(r.Status.Parents[0].Conditions, "ResolvedRefs") {
			routes++
		}
	}
	return accepted, resolved, routes, nil
}

func isTrue(conds []metav1.Condition, typ string) bool {
	c := findCond(conds, typ)
	return c != nil && c.Status == metav1.ConditionTrue
}

// logReconcileDurations reports the last full translations (the manager logs each at
// V(1) with the number of Backends and the duration).
func logReconcileDurations(t *testing.T, w *world) {
	var last []string
	for _, line := range w.logs.snapshot() {
		if _, rest, ok := strings.Cut(line, `"msg"="translated" `); ok {
			last = append(last, rest)
		}
	}
	if n := len(last); n > 3 {
		last = last[n-3:]
	}
	t.Logf("last reconciles: %s", strings.Join(last, "; "))
}
