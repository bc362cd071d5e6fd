package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testReferences: cross-namespace references work only while a ReferenceGrant in the
// target namespace allows them, and the condition follows the grant both ways. A
// Backend has no way to name a Secret of another namespace.
func testReferences(t *testing.T, w *world, pki suitePKI) {
	t.Run("HTTPRoute to a Backend in another namespace", func(t *testing.T) { testRouteToBackendGrant(t, w.in(t), pki) })
	t.Run("Gateway listener to a Secret in another namespace", func(t *testing.T) { testListenerSecretGrant(t, w.in(t), pki) })
	t.Run("a Backend cannot name a Secret of another namespace", func(t *testing.T) { testBackendSecretNamespace(t, w.in(t), pki) })
}

func testRouteToBackendGrant(t *testing.T, w *world, pki suitePKI) {
	const ns, other = "ref-route", "ref-route-b"
	w.applyCase(conditionCase{name: "route to another namespace", ns: ns, twoNamespaces: true, yaml: `{{template "gw" .}}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: {{.NS2}}}
spec:
  destination:
    type: IP
    ip: {address: 127.0.0.1}
    ports: [{name: http, port: 9, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: {{.NS}}}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b, namespace: {{.NS2}}}]}]
`}, pki)
	route := on("HTTPRoute", ns, "r").at("gw")
	backend := on("Backend", other, "b")
	refused := []want{route.is("ResolvedRefs=False/RefNotPermitted").with("Backend "+other+"/b", "no ReferenceGrant"),
		backend.is("Programmed=False/NotReferenced")}
	waitWants(t, w, refused, 20*time.Second)

	// Grants that do not match: in the route's own namespace, for another kind, from
	// another namespace, for another name.
	w.apply(strings.Join([]string{
		grantYAML("wrong-namespace", ns, "gateway.networking.k8s.io", "HTTPRoute", ns, "egress.portcullis.io", "Backend", ""),
		grantYAML("wrong-kind", other, "gateway.networking.k8s.io", "HTTPRoute", ns, "", "Service", ""),
		grantYAML("wrong-from", other, "gateway.networking.k8s.io", "HTTPRoute", "elsewhere", "egress.portcullis.io", "Backend", ""),
		grantYAML("wrong-name", other, "gateway.networking.k8s.io", "HTTPRoute", ns, "egress.portcullis.io", "Backend", "not-b"),
	}, "---"))
	holdFor(t, w, refused, 1500*time.Millisecond)

	grant := w.apply(grantYAML("allow", other, "gateway.networking.k8s.io", "HTTPRoute", ns, "egress.portcullis.io", "Backend", "b"))
	waitWants(t, w, []want{route.is("ResolvedRefs=True/ResolvedRefs"), backend.is("Programmed=False/Pending")}, 20*time.Second)

	remove(t, w, grant...)
	waitWants(t, w, refused, 20*time.Second)
}

func testListenerSecretGrant(t *testing.T, w *world, pki suitePKI) {
	const ns, other = "ref-listener", "ref-listener-b"
	w.applyCase(conditionCase{name: "listener certificate in another namespace", ns: ns, twoNamespaces: true, yaml: `
apiVersion: v1
kind: Secret
metadata: {name: server, namespace: {{.NS2}}}
type: kubernetes.io/tls
data: {tls.crt: {{b64 .Server.CertPEM}}, tls.key: {{b64 .Server.KeyPEM}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: {{.Class}}
  listeners: [{name: https, port: 8443, protocol: HTTPS, tls: {certificateRefs: [{name: server, namespace: {{.NS2}}}]}}]
`}, pki)
	listener := on("Gateway", ns, "gw").at("https")
	refused := []want{
		listener.is("ResolvedRefs=False/RefNotPermitted").with("Secret " + other + "/server"),
		listener.is("Programmed=False/Invalid").with("not served: no usable certificate"),
		on("Gateway", ns, "gw").is("Accepted=True/ListenersNotValid"),
	}
	waitWants(t, w, refused, 20*time.Second)

	grant := w.apply(grantYAML("allow", other, "gateway.networking.k8s.io", "Gateway", ns, "", "Secret", ""))
	waitWants(t, w, []want{listener.is("ResolvedRefs=True/ResolvedRefs"), listener.is("Accepted=True/Accepted"),
		on("Gateway", ns, "gw").is("Accepted=True/Accepted")}, 20*time.Second)

	remove(t, w, grant...)
	waitWants(t, w, refused, 20*time.Second)
}

// testBackendSecretNamespace: secretRef has no namespace field, so the API server drops
// one (or refuses it under strict field validation) and the Secret is looked up in the
// Backend's namespace, whatever ReferenceGrant exists.
func testBackendSecretNamespace(t *testing.T, w *world, pki suitePKI) {
	const ns, other = "ref-backend", "ref-backend-b"
	backend := `
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: ` + ns + `}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: b.suite.test
      tls: {clientCertificate: {secretRef: {name: client, namespace: ` + other + `}}}
    ports: [{name: https, port: 443, protocol: HTTPS}]
`
	w.applyCase(conditionCase{name: "client certificate in another namespace", ns: ns, twoNamespaces: true, yaml: `
apiVersion: v1
kind: Secret
metadata: {name: client, namespace: {{.NS2}}}
type: kubernetes.io/tls
data: {tls.crt: {{b64 .Client.CertPEM}}, tls.key: {{b64 .Client.KeyPEM}}}
`}, pki)
	w.apply(grantYAML("allow", other, "egress.portcullis.io", "Backend", ns, "", "Secret", ""))

	strict := decodeYAML(t, "strict", backend)[0]
	err := w.c.Create(context.Background(), strict, client.FieldValidation(metav1.FieldValidationStrict))
	if err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Fatalf("creating a Backend whose secretRef names a namespace under strict validation: %v; want an unknown-field error", err)
	}
	w.apply(backend)
	waitWants(t, w, []want{on("Backend", ns, "b").is("ResolvedRefs=False/InvalidCertificateRef").with("Secret " + ns + "/client not found")}, 20*time.Second)
}

// grantYAML is a ReferenceGrant in namespace ns from (group, kind, fromNS) to (toGroup,
// toKind, toName; any name when empty).
func grantYAML(name, ns, group, kind, fromNS, toGroup, toKind, toName string) string {
	to := `{group: "` + toGroup + `", kind: ` + toKind
	if toName != "" {
		to += ", name: " + toName
	}
	return `
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: ` + name + `, namespace: ` + ns + `}
spec:
  from: [{group: ` + group + `, kind: ` + kind + `, namespace: ` + fromNS + `}]
  to: [` + to + `}]
`
}

// holdFor checks that every want holds now and keeps holding for d: a change that must
// not flip a condition is given time to (wrongly) do so.
func holdFor(t *testing.T, w *world, wants []want, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		verifyWants(t, w, wants)
		if t.Failed() {
			t.FailNow()
		}
	}
}

// remove deletes the objects.
func remove(t *testing.T, w *world, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := w.c.Delete(context.Background(), o); err != nil {
			t.Fatalf("delete %s %s: %v", kindName(o), client.ObjectKeyFromObject(o), err)
		}
	}
}
