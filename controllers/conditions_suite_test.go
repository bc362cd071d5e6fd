package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testpki"
)

// suiteClass is the GatewayClass of every Gateway of TestOperator, served by
// suiteController: a controllerName of its own, so that the managers of later tests
// leave the suite's Gateways alone (they would otherwise serve their listeners too).
const (
	suiteClass      = "suite"
	suiteController = "portcullis.io/suite-test-controller"
)

// TestOperator runs the operator suite against one manager: every condition and reason
// the translator and the publisher produce, references, BackendTLSPolicy conflicts,
// Secret rotation and robustness. The parts share the world (one manager, one DNS
// guard) and use their own namespaces.
func TestOperator(t *testing.T) {
	w := newWorld(t, func(o *Options) {
		o.ControllerName = suiteController
		// The suite's Envoys have no System trust store at this path: a Backend trusting
		// System CAs is what Envoy rejects in the NACK case (as an Envoy image without
		// one would); no other case with an Envoy trusts System CAs.
		o.Envoy.SystemCAFile = missingSystemCA
		// As under portcullis local, whose API server holds this port on the machine.
		o.HeldPorts = map[uint32]string{suiteHeldPort: "kube-apiserver of portcullis local (--apiserver-port)"}
	})
	w.ensure(fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: %s}
spec: {controllerName: %s}
`, suiteClass, w.controller))
	// The suite's objects must find the manager running, as they would a live one: a
	// first reconcile that already sees them holds its statuses back while the DNS guard
	// warms up (warmup.go), and the silent name's Pending would never be written. The
	// class's status is written by a reconcile that saw no outside name.
	waitWants(t, w, []want{on("GatewayClass", "", suiteClass).is("Accepted=True/Accepted")}, 30*time.Second)
	pki := newSuitePKI(t)
	t.Run("every condition and reason", func(t *testing.T) { testConditions(t, w.in(t), pki) })
	t.Run("a conflicted HTTPS listener leaves the others programmable", func(t *testing.T) { testConflictedHTTPSListener(t, w.in(t), pki) })
	t.Run("cross-namespace references", func(t *testing.T) { testReferences(t, w.in(t), pki) })
	t.Run("BackendTLSPolicy conflicts and foreign status", func(t *testing.T) { testBackendTLSPolicies(t, w.in(t)) })
	t.Run("client certificate rotation", func(t *testing.T) { testRotation(t, w.in(t)) })
	t.Run("robustness", func(t *testing.T) { testRobustness(t, w.in(t), pki) })
}

// suitePKI holds the certificates the YAML of the suite embeds.
type suitePKI struct {
	CA                      []byte
	Server, Client, Expired testpki.Pair
}

func newSuitePKI(t *testing.T) suitePKI {
	ca := testpki.NewCA(t, "suite-ca")
	return suitePKI{
		CA:      ca.CertPEM,
		Server:  ca.Issue(t, testpki.Options{CommonName: "gateway.suite.test", DNSNames: []string{"*.suite.test"}}),
		Client:  ca.Issue(t, testpki.Options{CommonName: "suite-client", Client: true}),
		Expired: ca.Issue(t, testpki.Options{CommonName: "expired-client", Client: true, NotAfter: time.Now().Add(-time.Hour)}),
	}
}

// caseData is what a case's YAML template sees.
type caseData struct {
	suitePKI
	NS, NS2, Class, Controller string
	Port                       uint32
}

// snippets are templates every case may use: a Gateway "gw" with one HTTP listener
// for *.suite.test, Secrets "server" and "client" (kubernetes.io/tls) and a ConfigMap
// "ca" holding the CA bundle.
const snippets = `
{{define "gw"}}
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: {{.Class}}
  listeners: [{name: http, port: {{.Port}}, protocol: HTTP, hostname: "*.suite.test"}]
{{end}}
{{define "server"}}
apiVersion: v1
kind: Secret
metadata: {name: server, namespace: {{.NS}}}
type: kubernetes.io/tls
data: {tls.crt: {{b64 .Server.CertPEM}}, tls.key: {{b64 .Server.KeyPEM}}}
{{end}}
{{define "client"}}
apiVersion: v1
kind: Secret
metadata: {name: client, namespace: {{.NS}}}
type: kubernetes.io/tls
data: {tls.crt: {{b64 .Client.CertPEM}}, tls.key: {{b64 .Client.KeyPEM}}}
{{end}}
{{define "ca"}}
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: {{.NS}}}
data: {ca.crt: {{quote .CA}}}
{{end}}
`

// conditionCase is a set of objects in their own namespace (ns, and ns+"-b" when
// twoNamespaces) and what their statuses must show.
type conditionCase struct {
	name, ns      string
	twoNamespaces bool
	// envoy starts an Envoy for the Gateway ns/gw, on a free port.
	envoy bool
	// dns scripts the DNS server before the objects are created.
	dns   func(s *dnstest.Server)
	yaml  string
	wants func(ns string) []want
}

// routeYAML is an HTTPRoute "name" in namespace ns, attached to Gateway gw of the same
// namespace, sending everything to the Backend.
func routeYAML(ns, name, backend string) string {
	return fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: %[3]s}]}]
`, ns, name, backend)
}

// testConditions applies every case at once, waits for every want, then checks that a
// resync changes nothing and that every want still holds.
func testConditions(t *testing.T, w *world, pki suitePKI) {
	cases := conditionCases()
	cases = append(cases, programmedCases()...)
	var objs []client.Object
	var wants []want
	start := time.Now()
	for _, c := range cases {
		objs = append(objs, w.applyCase(c, pki)...)
		wants = append(wants, c.wants(c.ns)...)
	}
	waitWants(t, w, wants, 60*time.Second)
	t.Logf("%d cases, %d objects, %d wants settled in %v", len(cases), len(objs), len(wants), time.Since(start).Round(time.Millisecond))
	assertResyncWritesNothing(t, w, objs)
	verifyWants(t, w, wants)
}

// applyCase creates the case's namespaces and objects (after scripting DNS and starting
// its Envoy) and returns the objects.
func (w *world) applyCase(c conditionCase, pki suitePKI) []client.Object {
	w.t.Helper()
	data := caseData{suitePKI: pki, NS: c.ns, NS2: c.ns + "-b", Class: suiteClass, Controller: string(w.controller), Port: 8080}
	w.namespace(c.ns)
	if c.twoNamespaces {
		w.namespace(data.NS2)
	}
	if c.dns != nil {
		c.dns(w.dns)
	}
	if c.envoy {
		data.Port = xdstest.FreePort(w.t)
		w.startEnvoy(c.ns + "/gw")
	}
	return w.applyLabelled("case "+c.name, render(w.t, snippets+c.yaml, data))
}

// conditionCases cover the conditions that need no Envoy.
func conditionCases() []conditionCase {
	var cases []conditionCase
	for _, group := range [][]conditionCase{gatewayClassCases(), gatewayCases(), listenerCases(), routeCases(),
		backendCases(), dnsCases(), backendTLSCases(), policyCases()} {
		cases = append(cases, group...)
	}
	return cases
}

func gatewayClassCases() []conditionCase {
	return []conditionCase{{
		name: "our GatewayClass is Accepted and lists its supported features", ns: "cond-class-ours",
		wants: func(string) []want {
			return []want{
				on("GatewayClass", "", suiteClass).is("Accepted=True/Accepted"),
				on("GatewayClass", "", suiteClass).where("supportedFeatures lists BackendTLSPolicy", func(o client.Object) error {
					for _, f := range o.(*gwapiv1.GatewayClass).Status.SupportedFeatures {
						if f.Name == "BackendTLSPolicy" {
							return nil
						}
					}
					return fmt.Errorf("supportedFeatures %v", o.(*gwapiv1.GatewayClass).Status.SupportedFeatures)
				}),
			}
		},
	}, {
		name: "a GatewayClass with parametersRef is refused, and its Gateways are not served", ns: "cond-class-params",
		yaml: `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: suite-params}
spec:
  controllerName: {{.Controller}}
  parametersRef: {group: "", kind: ConfigMap, name: params, namespace: {{.NS}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: suite-params
  listeners: [{name: http, port: 8080, protocol: HTTP}]
`,
		wants: func(ns string) []want {
			return []want{
				on("GatewayClass", "", "suite-params").is("Accepted=False/InvalidParameters").with("parametersRef"),
				on("Gateway", ns, "gw").is("Accepted=Unknown/Pending"),
			}
		},
	}, {
		name: "another controller's GatewayClass and its Gateways are left alone", ns: "cond-class-foreign",
		yaml: `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: suite-foreign}
spec: {controllerName: example.com/another-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: suite-foreign
  listeners: [{name: http, port: 8080, protocol: HTTP}]
`,
		wants: func(ns string) []want {
			return []want{
				on("GatewayClass", "", "suite-foreign").is("Accepted=Unknown/Pending"),
				on("Gateway", ns, "gw").is("Accepted=Unknown/Pending"),
				on("Gateway", ns, "gw").is("Programmed=Unknown/Pending"),
			}
		},
	}}
}

func gatewayCases() []conditionCase {
	return []conditionCase{{
		name: "a valid Gateway is Accepted and, with no Envoy connected, Programmed=Pending", ns: "cond-gw-valid",
		yaml: `{{template "gw" .}}`,
		wants: func(ns string) []want {
			gw := on("Gateway", ns, "gw")
			return []want{
				gw.is("Accepted=True/Accepted"),
				gw.is("Programmed=False/Pending").with("no Envoy of the Gateway is connected"),
				gw.at("http").is("Accepted=True/Accepted"),
				gw.at("http").is("Programmed=False/Pending"),
				gw.at("http").is("ResolvedRefs=True/ResolvedRefs"),
				gw.at("http").is("Conflicted=False/NoConflicts"),
				gw.where("listener http supports HTTPRoute and has no route", listenerShape("http", 0, "HTTPRoute")),
			}
		},
	}, {
		name: "a Gateway with spec.addresses is refused", ns: "cond-gw-addresses",
		yaml: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: {{.Class}}
  addresses: [{type: IPAddress, value: 192.0.2.10}]
  listeners: [{name: http, port: 8080, protocol: HTTP}]
`,
		wants: func(ns string) []want {
			return []want{
				on("Gateway", ns, "gw").is("Accepted=False/UnsupportedAddress").with("spec.addresses"),
				on("Gateway", ns, "gw").is("Programmed=False/Invalid").with("not accepted"),
			}
		},
	}, {
		name: "a Gateway with an unsupported listener protocol serves its other listeners", ns: "cond-gw-partial",
		yaml: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: {{.Class}}
  listeners: [{name: http, port: 8080, protocol: HTTP}, {name: udp, port: 9000, protocol: UDP}]
`,
		wants: func(ns string) []want {
			gw := on("Gateway", ns, "gw")
			return []want{
				gw.is("Accepted=True/ListenersNotValid").with("1 of 2 listeners"),
				gw.at("udp").is("Accepted=False/UnsupportedProtocol").with("protocol UDP"),
				gw.at("udp").is("Programmed=False/Invalid"),
				gw.at("http").is("Accepted=True/Accepted"),
			}
		},
	}, {
		name: "a Gateway whose only listener takes Envoy's admin port is refused", ns: "cond-gw-reserved",
		yaml: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: {{.Class}}
  listeners: [{name: admin, port: 19000, protocol: HTTP}]
`,
		wants: func(ns string) []want {
			gw := on("Gateway", ns, "gw")
			return []want{
				gw.is("Accepted=False/ListenersNotValid"),
				gw.is("Programmed=False/Invalid"),
				gw.at("admin").is("Accepted=False/PortUnavailable").with("port 19000"),
			}
		},
	}, {
		name: "a listener on a port the local control plane holds is refused, naming the holder", ns: "cond-gw-held",
		yaml: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: {{.Class}}
  listeners: [{name: api, port: 16443, protocol: HTTP}]
`,
		wants: func(ns string) []want {
			gw := on("Gateway", ns, "gw")
			return []want{
				gw.is("Accepted=False/ListenersNotValid"),
				gw.at("api").is("Accepted=False/PortUnavailable").with("port 16443 is held by kube-apiserver of portcullis local"),
			}
		},
	}}
}

// suiteHeldPort is a port the suite's manager is told another process holds.
const suiteHeldPort = 16443

// listenerShape checks a listener's supportedKinds and attachedRoutes.
func listenerShape(name string, attached int32, kinds ...string) func(client.Object) error {
	return func(o client.Object) error {
		for _, l := range o.(*gwapiv1.Gateway).Status.Listeners {
			if string(l.Name) != name {
				continue
			}
			var got []string
			for _, k := range l.SupportedKinds {
				got = append(got, string(k.Kind))
			}
			if l.AttachedRoutes != attached || strings.Join(got, ",") != strings.Join(kinds, ",") {
				return fmt.Errorf("attachedRoutes %d, supportedKinds %v", l.AttachedRoutes, got)
			}
			return nil
		}
		return fmt.Errorf("no listener %s", name)
	}
}

func listenerCases() []conditionCase {
	return []conditionCase{{
		name: "listeners sharing an Envoy port conflict by hostname or by protocol", ns: "cond-listener-conflicts",
		// Port 80 is bound at 10080 inside Envoy, so it collides with port 10080.
		yaml: `{{template "server" .}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: {{.Class}}
  listeners:
  - {name: low, port: 80, protocol: HTTP}
  - {name: high, port: 10080, protocol: HTTP}
  - {name: plain, port: 443, protocol: HTTP}
  - {name: secure, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: server}]}}
  - {name: free, port: 8080, protocol: HTTP}
`,
		wants: func(ns string) []want {
			gw := on("Gateway", ns, "gw")
			return []want{
				gw.is("Accepted=True/ListenersNotValid").with("4 of 5 listeners"),
				gw.at("low").is("Conflicted=True/HostnameConflict").with("listener high"),
				gw.at("high").is("Conflicted=True/HostnameConflict").with("listener low"),
				gw.at("low").is("Programmed=False/Invalid"),
				gw.at("plain").is("Conflicted=True/ProtocolConflict").with("protocol HTTPS"),
				gw.at("secure").is("Conflicted=True/ProtocolConflict").with("protocol HTTP"),
				gw.at("free").is("Conflicted=False/NoConflicts"),
				gw.at("free").is("Accepted=True/Accepted"),
			}
		},
	}, {
		name: "HTTPS listeners resolve their certificate references; unsupported route kinds are reported", ns: "cond-listener-tls",
		yaml: `{{template "server" .}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: {{.Class}}
  listeners:
  - {name: no-tls, port: 8443, protocol: HTTPS}
  - {name: missing, port: 8444, protocol: HTTPS, tls: {certificateRefs: [{name: absent}]}}
  - {name: partial, port: 8445, protocol: HTTPS, tls: {certificateRefs: [{name: server}, {name: absent}]}}
  - {name: wrong-kind, port: 8446, protocol: HTTPS, tls: {certificateRefs: [{group: "", kind: ConfigMap, name: server}]}}
  - {name: good, port: 8447, protocol: HTTPS, tls: {certificateRefs: [{name: server}]}}
  - {name: grpc-only, port: 8080, protocol: HTTP, allowedRoutes: {kinds: [{kind: GRPCRoute}]}}
`,
		wants: func(ns string) []want {
			gw := on("Gateway", ns, "gw")
			return []want{
				gw.at("no-tls").is("Accepted=False/InvalidCertificateRef").with("needs tls.certificateRefs"),
				gw.at("missing").is("Accepted=True/Accepted"),
				gw.at("missing").is("Programmed=False/Invalid").with("not served: no usable certificate"),
				gw.at("missing").is("ResolvedRefs=False/InvalidCertificateRef").with("tls.certificateRefs[0]", "Secret "+ns+"/absent not found"),
				gw.at("partial").is("Accepted=True/Accepted"),
				gw.at("partial").is("ResolvedRefs=False/InvalidCertificateRef").with("tls.certificateRefs[1]"),
				gw.at("wrong-kind").is("ResolvedRefs=False/InvalidCertificateRef").with("only core Secrets"),
				gw.at("good").is("Accepted=True/Accepted"),
				gw.at("good").is("ResolvedRefs=True/ResolvedRefs"),
				gw.at("grpc-only").is("ResolvedRefs=False/InvalidRouteKinds").with("GRPCRoute"),
				gw.where("listener grpc-only supports no kind", listenerShape("grpc-only", 0)),
			}
		},
	}}
}

func routeCases() []conditionCase {
	backend := `
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: {{.NS}}}
spec:
  destination:
    type: IP
    ip: {address: 127.0.0.1}
    ports: [{name: http, port: 9, protocol: HTTP}]
`
	route := func(spec string) string {
		return `{{template "gw" .}}
---` + backend + `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: {{.NS}}}
spec:
` + spec
	}
	routeWants := func(reasons ...string) func(string) []want {
		return func(ns string) []want {
			var out []want
			for _, r := range reasons {
				out = append(out, on("HTTPRoute", ns, "r").at("gw").is(r))
			}
			return out
		}
	}
	return []conditionCase{{
		name: "an attached route with resolved references", ns: "cond-route-ok",
		yaml: route(`
  parentRefs: [{name: gw}]
  hostnames: [api.suite.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b}]}]
`),
		wants: func(ns string) []want {
			return append(routeWants("Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs")(ns),
				on("Gateway", ns, "gw").where("listener http has one attached route", listenerShape("http", 1, "HTTPRoute")))
		},
	}, {
		name: "a parentRef naming no listener", ns: "cond-route-section",
		yaml: route(`
  parentRefs: [{name: gw, sectionName: nope}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b}]}]
`),
		wants: routeWants("Accepted=False/NoMatchingParent"),
	}, {
		name: "a route from a namespace the listener does not admit", ns: "cond-route-ns", twoNamespaces: true,
		yaml: `{{template "gw" .}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: {{.NS2}}}
spec:
  parentRefs: [{name: gw, namespace: {{.NS}}}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b}]}]
`,
		wants: func(ns string) []want {
			return []want{on("HTTPRoute", ns+"-b", "r").at("gw").is("Accepted=False/NotAllowedByListeners").with(ns + "-b")}
		},
	}, {
		name: "route hostnames outside the listener's", ns: "cond-route-hostname",
		yaml: route(`
  parentRefs: [{name: gw}]
  hostnames: [api.elsewhere.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b}]}]
`),
		wants: routeWants("Accepted=False/NoMatchingListenerHostname"),
	}, {
		name: "an unsupported filter refuses the route", ns: "cond-route-filter",
		yaml: route(`
  parentRefs: [{name: gw}]
  rules:
  - filters: [{type: ExtensionRef, extensionRef: {group: example.com, kind: Magic, name: m}}]
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b}]
`),
		wants: func(ns string) []want {
			return []want{on("HTTPRoute", ns, "r").at("gw").is("Accepted=False/UnsupportedValue").with("ExtensionRef")}
		},
	}, {
		name: "a mirror to a missing Service is reported and left out", ns: "cond-route-mirror",
		yaml: route(`
  parentRefs: [{name: gw}]
  rules:
  - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: mirror, port: 80}}}]
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b}]
`),
		wants: func(ns string) []want {
			return []want{
				on("HTTPRoute", ns, "r").at("gw").is("Accepted=True/Accepted"),
				on("HTTPRoute", ns, "r").at("gw").is("ResolvedRefs=False/BackendNotFound").with("requestMirror.backendRef", "Service "+ns+"/mirror not found"),
			}
		},
	}, {
		name: "backendRefs to a missing Backend, a missing Service, an unsupported kind", ns: "cond-route-refs",
		yaml: route(`
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{group: egress.portcullis.io, kind: Backend, name: absent}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: to-service, namespace: {{.NS}}}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: absent, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: to-configmap, namespace: {{.NS}}}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{group: "", kind: ConfigMap, name: b}]}]
`),
		wants: func(ns string) []want {
			return []want{
				on("HTTPRoute", ns, "r").at("gw").is("Accepted=True/Accepted"),
				on("HTTPRoute", ns, "r").at("gw").is("ResolvedRefs=False/BackendNotFound").with("rules[0].backendRefs[0]", "Backend "+ns+"/absent not found"),
				on("HTTPRoute", ns, "to-service").at("gw").is("ResolvedRefs=False/BackendNotFound").with("Service " + ns + "/absent not found"),
				on("HTTPRoute", ns, "to-configmap").at("gw").is("ResolvedRefs=False/InvalidKind").with("ConfigMap"),
			}
		},
	}, {
		name: "a backendRef across namespaces without a ReferenceGrant", ns: "cond-route-grant", twoNamespaces: true,
		yaml: route(`
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b, namespace: {{.NS2}}}]}]
`),
		wants: func(ns string) []want {
			return []want{on("HTTPRoute", ns, "r").at("gw").is("ResolvedRefs=False/RefNotPermitted").with("no ReferenceGrant")}
		},
	}, {
		name: "a backendRef to a Backend of several ports without backendRef.port", ns: "cond-route-port",
		yaml: `{{template "gw" .}}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: two-ports, namespace: {{.NS}}}
spec:
  destination:
    type: IP
    ip: {address: 127.0.0.1}
    ports: [{name: http, port: 9, protocol: HTTP}, {name: alt, port: 10, protocol: HTTP}]
---` + routeYAML("{{.NS}}", "r", "two-ports"),
		wants: func(ns string) []want {
			return []want{on("HTTPRoute", ns, "r").at("gw").is("ResolvedRefs=False/InvalidBackend").with("set backendRef.port")}
		},
	}}
}

// backendCases cover Backend Accepted, ResolvedRefs and Programmed reasons.
func backendCases() []conditionCase {
	ipBackend := func(name, address string) string {
		return fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: %s, namespace: {{.NS}}}
spec:
  destination:
    type: IP
    ip: {address: %q}
    ports: [{name: http, port: 9, protocol: HTTP}]
`, name, address)
	}
	fqdn := func(name, extra string) string {
		return fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: %[1]s, namespace: {{.NS}}}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: %[1]s.suite.test%[2]s
    ports: [{name: https, port: 443, protocol: HTTPS}]
`, name, extra)
	}
	withExt := func(name, ext string) string {
		return fqdn(name, "") + "  extensions: [" + ext + "]\n"
	}
	return []conditionCase{{
		name: "IP destinations: private and metadata addresses are refused, an allowed one is accepted", ns: "cond-backend-ip",
		yaml: ipBackend("private", "10.1.1.1") + "---" + ipBackend("metadata", "169.254.169.254") + "---" + ipBackend("loopback", "127.0.0.1"),
		wants: func(ns string) []want {
			return []want{
				on("Backend", ns, "private").is("Accepted=False/ForbiddenDestination").with("spec.destination.ip.address 10.1.1.1"),
				on("Backend", ns, "metadata").is("Accepted=False/ForbiddenDestination").with("169.254.169.254"),
				on("Backend", ns, "loopback").is("Accepted=True/Accepted"),
				on("Backend", ns, "loopback").is("ResolvedRefs=True/ResolvedRefs"),
				on("Backend", ns, "loopback").is("AddressesResolved=absent"),
				on("Backend", ns, "loopback").is("Programmed=False/NotReferenced"),
				on("Backend", ns, "loopback").where("status.destination and ports, no effectiveTLS for plain HTTP", backendSummary("127.0.0.1", "9/HTTP", "")),
			}
		},
	}, {
		name: "protocols and extensions the gateway does not implement, and invalid settings", ns: "cond-backend-spec",
		yaml: fqdn("quic", "\n      protocol: {type: example.com/quic}") + "---" +
			fqdn("h2opt", "\n      protocol: {type: HTTP2, options: {pingInterval: 5s}}") + "---" +
			fqdn("mcpidle", "\n      protocol: {type: MCP, options: {idleTimeout: forever}}") + "---" +
			withExt("exttype", "{type: example.com/rate-limit, config: {rps: 5}}") + "---" +
			withExt("extkey", "{type: portcullis.io/connection-pool, config: {maxConns: 5}}") + "---" +
			withExt("extvalue", "{type: portcullis.io/connection-pool, config: {timeout: soon}}"),
		wants: func(ns string) []want {
			b := func(name string) want { return on("Backend", ns, name) }
			return []want{
				b("quic").is("Accepted=False/UnsupportedProtocol").with("example.com/quic", "supported: HTTP1, HTTP2, GRPC, WebSocket, MCP"),
				b("h2opt").is("Accepted=False/UnsupportedProtocol").with("options.pingInterval"),
				b("mcpidle").is("Accepted=False/Invalid").with("options.idleTimeout"),
				b("exttype").is("Accepted=False/UnsupportedExtension").with("example.com/rate-limit"),
				b("extkey").is("Accepted=False/UnsupportedExtension").with("config.maxConns"),
				b("extvalue").is("Accepted=False/Invalid").with("spec.extensions[0]"),
			}
		},
	}, {
		name: "references a Backend cannot resolve", ns: "cond-backend-refs",
		yaml: fqdn("cert", "\n      tls: {clientCertificate: {secretRef: {name: absent}}}") + "---" +
			fqdn("cabundle", "\n      tls: {caCertificates: [{secretRef: {name: absent-ca, kind: ConfigMap}}]}") + "---" +
			withExt("credential", "{type: portcullis.io/credential-injection, config: {secretRef: {name: absent-token}, key: token}}") + `---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: service, namespace: {{.NS}}}
spec:
  destination:
    type: Service
    kubernetesService: {name: absent-svc}
    ports: [{name: http, port: 80, protocol: HTTP}]
`,
		wants: func(ns string) []want {
			b := func(name string) want { return on("Backend", ns, name) }
			return []want{
				b("cert").is("ResolvedRefs=False/InvalidCertificateRef").with("tls.clientCertificate", "Secret "+ns+"/absent not found"),
				b("cert").is("Accepted=True/Accepted"),
				b("cabundle").is("ResolvedRefs=False/InvalidCACertificateRef").with("tls.caCertificates[0]", "ConfigMap "+ns+"/absent-ca not found"),
				b("credential").is("ResolvedRefs=False/InvalidCredentialRef").with("credential-injection", "Secret "+ns+"/absent-token not found"),
				b("service").is("ResolvedRefs=False/ServiceNotFound").with("Service " + ns + "/absent-svc not found"),
			}
		},
	}, {
		name: "Backends referenced on a Gateway without Envoy are Pending; an unusable one says why", ns: "cond-backend-pending",
		yaml: `{{template "gw" .}}
---` + ipBackend("usable", "127.0.0.1") + "---" + routeYAML("{{.NS}}", "usable", "usable") + "---" +
			fqdn("unusable", "\n      tls: {clientCertificate: {secretRef: {name: absent}}}") + "---" + routeYAML("{{.NS}}", "unusable", "unusable"),
		wants: func(ns string) []want {
			return []want{
				on("Backend", ns, "usable").is("Programmed=False/Pending").with(ns+"/gw", "no Envoy"),
				on("Backend", ns, "unusable").is("Programmed=False/Pending").with("not programmed while the Backend is not accepted"),
				on("HTTPRoute", ns, "unusable").at("gw").is("ResolvedRefs=False/InvalidBackend").with("InvalidCertificateRef"),
			}
		},
	}}
}

// backendSummary checks status.destination, status.ports and effectiveTLS.source.
func backendSummary(destination, ports, tlsSource string) func(client.Object) error {
	return func(o client.Object) error {
		st := o.(*egressv1alpha1.Backend).Status
		source := ""
		if st.EffectiveTLS != nil {
			source = string(st.EffectiveTLS.Source)
		}
		if st.Destination != destination || st.Ports != ports || source != tlsSource {
			return fmt.Errorf("destination %q, ports %q, effectiveTLS %+v", st.Destination, st.Ports, st.EffectiveTLS)
		}
		return nil
	}
}

// dnsCases cover every AddressesResolved reason, addresses and blockedAddresses.
func dnsCases() []conditionCase {
	fqdn := func(host string) string {
		return fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: %s, namespace: {{.NS}}}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: %s}
    ports: [{name: http, port: 9, protocol: HTTP}]
`, strings.Split(host, ".")[0], host)
	}
	return []conditionCase{{
		name: "the DNS guard's verdicts: resolved, forbidden, NXDOMAIN, failing, stale", ns: "cond-dns",
		dns: func(s *dnstest.Server) {
			// A TTL of 300 s (the maximum) keeps addresses, and so statuses, still for the test.
			s.Set("mixed.dns.suite.test", "mixed.dns.suite.test. 300 IN A 127.0.0.1", "mixed.dns.suite.test. 300 IN A 10.1.2.3")
			s.Set("private.dns.suite.test", "private.dns.suite.test. 300 IN A 10.9.9.9", "private.dns.suite.test. 300 IN A 169.254.169.254")
			s.Script("failing.dns.suite.test", dnstest.Response{Rcode: dns.RcodeServerFailure})
			s.Script("stale.dns.suite.test", dnstest.Response{Answer: []string{"stale.dns.suite.test. 1 IN A 127.0.0.2"}},
				dnstest.Response{Rcode: dns.RcodeServerFailure})
			s.Script("silent.dns.suite.test", dnstest.Response{Drop: true})
			s.Set("outside.dns.suite.test", "outside.dns.suite.test. 300 IN A 127.0.0.3")
		},
		yaml: fqdn("mixed.dns.suite.test") + "---" + fqdn("private.dns.suite.test") + "---" + fqdn("absent.dns.suite.test") + "---" +
			fqdn("failing.dns.suite.test") + "---" + fqdn("stale.dns.suite.test") + "---" + fqdn("silent.dns.suite.test") + "---" +
			externalName("outside", "outside.dns.suite.test") + "---" + externalName("inside", "db.prod.svc.cluster.local"),
		wants: func(ns string) []want {
			b := func(name string) want { return on("Backend", ns, name) }
			return []want{
				b("mixed").is("AddressesResolved=True/Resolved").with("1 vetted address", "blocked: 10.1.2.3"),
				b("mixed").where("addresses [127.0.0.1] with expiry, blocked [10.1.2.3]", addressStatus([]string{"127.0.0.1"}, []string{"10.1.2.3"})),
				b("private").is("AddressesResolved=False/AllAddressesForbidden").with("refused by the DNS guard"),
				b("private").where("no addresses, both answers blocked", addressStatus(nil, []string{"10.9.9.9", "169.254.169.254"})),
				b("absent").is("AddressesResolved=False/NXDomain").with("absent.dns.suite.test does not exist"),
				b("failing").is("AddressesResolved=False/ResolutionFailed"),
				b("stale").is("AddressesResolved=False/Stale").with("last vetted addresses are used"),
				b("stale").where("the last vetted address is kept", addressStatus([]string{"127.0.0.2"}, nil)),
				b("silent").is("AddressesResolved=Unknown/Pending").with("waiting for the DNS guard").once(),
				b("silent").is("AddressesResolved=False/ResolutionFailed"),
				b("mixed").is("Accepted=True/Accepted"),
				b("outside").is("AddressesResolved=True/Resolved").with("outside.dns.suite.test"),
				b("outside").where("the ExternalName's address", addressStatus([]string{"127.0.0.3"}, nil)),
				b("inside").is("AddressesResolved=False/AllAddressesForbidden").with("db.prod.svc.cluster.local"),
			}
		},
	}}
}

// externalName is an ExternalName Service and a Backend of the same name sending to it.
func externalName(name, target string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: {{.NS}}}
spec: {type: ExternalName, externalName: %[2]s}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: %[1]s, namespace: {{.NS}}}
spec:
  destination:
    type: Service
    kubernetesService: {name: %[1]s}
    ports: [{name: http, port: 9, protocol: HTTP}]
`, name, target)
}

// addressStatus checks status.addresses (each dated since) and the blocked IPs, in order.
func addressStatus(vetted, blocked []string) func(client.Object) error {
	return func(o client.Object) error {
		st := o.(*egressv1alpha1.Backend).Status
		var gotV, gotB []string
		for _, a := range st.Addresses {
			if a.Since == nil || a.Since.IsZero() {
				return fmt.Errorf("address %s has no since", a.IP)
			}
			gotV = append(gotV, a.IP)
		}
		for _, b := range st.BlockedAddresses {
			if b.Reason == "" {
				return fmt.Errorf("blocked address %s has no reason", b.IP)
			}
			gotB = append(gotB, b.IP)
		}
		if strings.Join(gotV, ",") != strings.Join(vetted, ",") || strings.Join(gotB, ",") != strings.Join(blocked, ",") {
			return fmt.Errorf("addresses %v, blocked %+v", gotV, st.BlockedAddresses)
		}
		return nil
	}
}

// backendTLSCases cover every effectiveTLS source.
func backendTLSCases() []conditionCase {
	return []conditionCase{{
		name: "effective TLS: inline CA and client certificate, System store, verification off", ns: "cond-backend-tls",
		yaml: `{{template "client" .}}
---
{{template "ca" .}}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: inline, namespace: {{.NS}}}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: inline.suite.test
      tls:
        serverName: sni.suite.test
        caCertificates: [{secretRef: {name: ca, kind: ConfigMap}}]
        clientCertificate: {secretRef: {name: client}}
    ports: [{name: https, port: 443, protocol: HTTPS}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: system, namespace: {{.NS}}}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: system.suite.test}
    ports: [{name: https, port: 443, protocol: HTTPS}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: insecure, namespace: {{.NS}}}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: insecure.suite.test, tls: {insecureSkipVerify: true}}
    ports: [{name: https, port: 443, protocol: HTTPS}]
`,
		wants: func(ns string) []want {
			b := func(name string) want { return on("Backend", ns, name) }
			return []want{
				b("inline").is("ResolvedRefs=True/ResolvedRefs"),
				b("inline").where("effectiveTLS Inline, SNI sni.suite.test, client certificate from Secret client",
					effectiveTLS(egressv1alpha1.TLSSourceInline, "sni.suite.test", "client", "")),
				b("system").where("effectiveTLS System with the hostname as SNI", effectiveTLS(egressv1alpha1.TLSSourceSystem, "system.suite.test", "", "")),
				b("insecure").where("effectiveTLS Insecure", effectiveTLS(egressv1alpha1.TLSSourceInsecure, "insecure.suite.test", "", "")),
			}
		},
	}}
}

// effectiveTLS checks a Backend's status.effectiveTLS.
func effectiveTLS(source egressv1alpha1.TLSSource, serverName, clientCert, policy string) func(client.Object) error {
	return func(o client.Object) error {
		e := o.(*egressv1alpha1.Backend).Status.EffectiveTLS
		if e == nil {
			return fmt.Errorf("no effectiveTLS")
		}
		gotPolicy := ""
		if e.PolicyRef != nil {
			gotPolicy = e.PolicyRef.Namespace + "/" + e.PolicyRef.Name
		}
		if e.Source != source || e.ServerName != serverName || e.ClientCertificate != clientCert || gotPolicy != policy {
			return fmt.Errorf("effectiveTLS %+v (policy %q)", *e, gotPolicy)
		}
		return nil
	}
}

// serviceWithPolicyYAML is a Service "svc" (port https 443), a Backend "b" sending to it
// with inline TLS, and a route to the Backend on Gateway gw.
const serviceWithPolicyYAML = `{{template "gw" .}}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: {{.NS}}}
spec:
  ports: [{name: https, port: 443, targetPort: 8443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: {{.NS}}}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b}]}]
`

// policyCases cover BackendTLSPolicy ancestor statuses and their effect on Backends.
func policyCases() []conditionCase {
	backend := func(tls string) string {
		return `
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: {{.NS}}}
spec:
  destination:
    type: Service
    kubernetesService: {name: svc` + tls + `}
    ports: [{name: https, port: 443, protocol: HTTPS}]
`
	}
	policy := func(name, validation string) string {
		return fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: %s, namespace: {{.NS}}}
spec:
  targetRefs: [{group: "", kind: Service, name: svc}]
  validation: %s
`, name, validation)
	}
	return []conditionCase{{
		name: "an accepted policy sets the Backend's server verification", ns: "cond-policy-ok",
		yaml: serviceWithPolicyYAML + "---" + `{{template "client" .}}` + "---" +
			backend(", tls: {serverName: ignored.suite.test, clientCertificate: {secretRef: {name: client}}}") + "---" +
			policy("p", "{hostname: svc.suite.test, wellKnownCACertificates: System}"),
		wants: func(ns string) []want {
			return []want{
				on("BackendTLSPolicy", ns, "p").at("gw").is("Accepted=True/Accepted"),
				on("BackendTLSPolicy", ns, "p").at("gw").is("ResolvedRefs=True/ResolvedRefs"),
				on("Backend", ns, "b").is("Accepted=True/Accepted").with("BackendTLSPolicy "+ns+"/p sets server verification", "tls.serverName is ignored"),
				on("Backend", ns, "b").where("effectiveTLS from the policy, client certificate from the Backend",
					effectiveTLS(egressv1alpha1.TLSSourceBackendTLSPolicy, "svc.suite.test", "client", ns+"/p")),
			}
		},
	}, {
		name: "a policy whose CA is missing, one whose CA is of an unsupported kind", ns: "cond-policy-ca",
		yaml: serviceWithPolicyYAML + "---" + backend("") + "---" +
			policy("missing", "{hostname: svc.suite.test, caCertificateRefs: [{group: \"\", kind: ConfigMap, name: absent}]}") + `---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: kind, namespace: {{.NS}}}
spec:
  targetRefs: [{group: "", kind: Service, name: svc, sectionName: https}]
  validation: {hostname: svc.suite.test, caCertificateRefs: [{group: "", kind: Bundle, name: ca}]}
`,
		wants: func(ns string) []want {
			p := func(name string) want { return on("BackendTLSPolicy", ns, name).at("gw") }
			return []want{
				p("missing").is("Accepted=False/NoValidCACertificate").with("ConfigMap " + ns + "/absent not found"),
				p("missing").is("ResolvedRefs=False/InvalidCACertificateRef"),
				p("kind").is("Accepted=False/NoValidCACertificate"),
				p("kind").is("ResolvedRefs=False/InvalidKind").with("kind /Bundle"),
				// The policy naming the port wins; its CA cannot be used, so the Backend fails closed.
				on("Backend", ns, "b").is("ResolvedRefs=False/InvalidCACertificateRef").with("BackendTLSPolicy " + ns + "/kind"),
			}
		},
	}, {
		name: "a policy targeting a Backend is refused; under a policy, insecureSkipVerify and an empty TLS version range are refused", ns: "cond-policy-refusals",
		yaml: serviceWithPolicyYAML + "---" + backend(", tls: {insecureSkipVerify: true}") + "---" +
			strings.Replace(backend(`, tls: {maxVersion: "1.2"}`), "name: b,", "name: max12,", 1) + "---" +
			policy("p", "{hostname: svc.suite.test, wellKnownCACertificates: System}") + "  options: {portcullis.io/min-tls-version: \"1.3\"}\n" + `---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: on-backend, namespace: {{.NS}}}
spec:
  targetRefs: [{group: egress.portcullis.io, kind: Backend, name: b}]
  validation: {hostname: svc.suite.test, wellKnownCACertificates: System}
`,
		wants: func(ns string) []want {
			return []want{
				on("BackendTLSPolicy", ns, "on-backend").at("gw").is("Accepted=False/Invalid").with("use spec.destination.*.tls"),
				on("Backend", ns, "b").is("Accepted=False/Invalid").with("tls.insecureSkipVerify", ns+"/p"),
				on("Backend", ns, "max12").is("Accepted=False/Invalid").with("requires TLS 1.3 or higher", "no version is left"),
			}
		},
	}, {
		name: "two policies on one Service: the other one is Conflicted", ns: "cond-policy-conflict",
		yaml: serviceWithPolicyYAML + "---" + backend("") + "---" +
			policy("a-first", "{hostname: svc.suite.test, wellKnownCACertificates: System}") + "---" +
			policy("b-second", "{hostname: svc.suite.test, wellKnownCACertificates: System}"),
		wants: func(ns string) []want {
			return []want{
				on("BackendTLSPolicy", ns, "b-second").at("gw").is("Accepted=False/Conflicted").with(ns + "/a-first"),
				on("BackendTLSPolicy", ns, "a-first").at("gw").is("Accepted=True/Accepted"),
			}
		},
	}}
}

// missingSystemCA is the System trust store the operator suite configures: a file that
// does not exist, which Envoy refuses to load.
const missingSystemCA = "/nonexistent/portcullis-suite/ca-certificates.crt"

// programmedCases need Envoy: a Gateway, its listener and a Backend Programmed once Envoy
// acknowledged; and Envoy's rejection, with its message, for a configuration only Envoy
// can find wrong (its System trust store file is missing).
func programmedCases() []conditionCase {
	return []conditionCase{{
		name: "Envoy acknowledged: Gateway, listener and Backend are Programmed", ns: "cond-programmed", envoy: true,
		dns: func(s *dnstest.Server) {
			s.Set("programmed.suite.test", "programmed.suite.test. 300 IN A 127.0.0.1")
		},
		yaml: `{{template "gw" .}}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: {{.NS}}}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: programmed.suite.test}
    ports: [{name: http, port: 9, protocol: HTTP}]
---` + routeYAML("{{.NS}}", "r", "b"),
		wants: func(ns string) []want {
			return []want{
				on("Gateway", ns, "gw").is("Programmed=True/Programmed"),
				on("Gateway", ns, "gw").at("http").is("Programmed=True/Programmed"),
				on("Backend", ns, "b").is("Programmed=True/Programmed").with(ns + "/gw"),
				on("Backend", ns, "b").is("AddressesResolved=True/Resolved"),
			}
		},
	}, {
		name: "Envoy rejected a Backend: the NACK's message is in the Backend's Programmed, the Gateway serves the rest", ns: "cond-rejected", envoy: true,
		yaml: `{{template "gw" .}}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: {{.NS}}}
spec:
  destination:
    type: IP
    ip:
      address: 127.0.0.1
      tls: {wellKnownCACertificates: System, serverName: rejected.suite.test}
    ports: [{name: https, port: 9, protocol: HTTPS}]
---` + routeYAML("{{.NS}}", "r", "b"),
		wants: func(ns string) []want {
			return []want{
				on("HTTPRoute", ns, "r").at("gw").is("ResolvedRefs=True/ResolvedRefs"),
				on("Backend", ns, "b").is("Accepted=True/Accepted"),
				on("Gateway", ns, "gw").is("Programmed=True/Programmed"),
				on("Backend", ns, "b").is("Programmed=False/Rejected").with("Envoy rejected this Backend's new settings (Gateway "+ns+"/gw", missingSystemCA),
			}
		},
	}}
}

// testConflictedHTTPSListener: a listener that loses a conflict is not served, and its
// certificate must not be published either (a Secret no listener references makes the
// snapshot inconsistent, which used to hold back the whole Gateway with
// Programmed=False/Invalid); the Gateway's other listeners are programmable.
func testConflictedHTTPSListener(t *testing.T, w *world, pki suitePKI) {
	const ns = "cond-conflicted-https"
	w.applyCase(conditionCase{name: "conflicted HTTPS listener", ns: ns, yaml: `{{template "server" .}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: {{.NS}}}
spec:
  gatewayClassName: {{.Class}}
  listeners:
  - {name: plain, port: 443, protocol: HTTP}
  - {name: secure, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: server}]}}
  - {name: free, port: 8080, protocol: HTTP}
`}, pki)
	waitWants(t, w, []want{
		on("Gateway", ns, "gw").at("secure").is("Conflicted=True/ProtocolConflict"),
		on("Gateway", ns, "gw").is("Programmed=False/Pending").with("no Envoy of the Gateway is connected"),
	}, 20*time.Second)
}
