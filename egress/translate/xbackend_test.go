package translate

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/internal/testpki"
)

// xb is an XBackend to api.example.com:443 for the conversion tables, changed by edit.
func xb(edit func(*gwapixv1alpha1.XBackend)) *gwapixv1alpha1.XBackend {
	x := &gwapixv1alpha1.XBackend{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "api", Generation: 4},
		Spec: gwapixv1alpha1.BackendSpec{
			Type:             gwapixv1alpha1.BackendTypeExternalHostname,
			ExternalHostname: &gwapixv1alpha1.ExternalHostnameBackend{Hostname: "api.example.com"},
			Port:             gwapixv1alpha1.BackendPort{Port: 443},
		},
	}
	if edit != nil {
		edit(x)
	}
	return x
}

func withTLS(mode gwapixv1alpha1.BackendTLSMode) func(*gwapixv1alpha1.XBackend) {
	return func(x *gwapixv1alpha1.XBackend) {
		x.Spec.TLS = &gwapixv1alpha1.BackendTLS{Mode: mode}
		if mode == gwapixv1alpha1.BackendTLSModeClientAndServer {
			x.Spec.TLS.ClientCertificateRef = &gwapiv1.SecretObjectReference{Name: "client"}
		}
	}
}

// TestConvertXBackendProtocols: every protocol under every TLS mode gives the Backend
// port protocol and protocol type the Backend API would be written with, or a refusal.
func TestConvertXBackendProtocols(t *testing.T) {
	protocols := []gwapixv1alpha1.BackendProtocol{"", gwapixv1alpha1.BackendProtocolHTTP, gwapixv1alpha1.BackendProtocolHTTP11,
		gwapixv1alpha1.BackendProtocolHTTP2, gwapixv1alpha1.BackendProtocolH2C, gwapixv1alpha1.BackendProtocolGRPC,
		gwapixv1alpha1.BackendProtocolMCP, gwapixv1alpha1.BackendProtocolTCP, "SPDY"}
	// want is "<port protocol>/<protocol type>" ("-" for no protocol block), or the refusal's reason.
	want := map[bool]map[gwapixv1alpha1.BackendProtocol]string{
		false: {"": "HTTP/-", "HTTP": "HTTP/-", "HTTP11": "HTTP/-", "HTTP2": "HTTP/HTTP2", "H2C": "HTTP/HTTP2",
			"GRPC": "HTTP/GRPC", "MCP": "HTTP/MCP", "TCP": "TCP/-", "SPDY": "UnsupportedProtocol"},
		true: {"": "HTTPS/-", "HTTP": "HTTPS/-", "HTTP11": "HTTPS/-", "HTTP2": "HTTPS/HTTP2", "H2C": "UnsupportedProtocol",
			"GRPC": "HTTPS/GRPC", "MCP": "HTTPS/MCP", "TCP": "TLS/-", "SPDY": "UnsupportedProtocol"},
	}
	modes := []gwapixv1alpha1.BackendTLSMode{"", gwapixv1alpha1.BackendTLSModeNone, gwapixv1alpha1.BackendTLSModeServerOnly, gwapixv1alpha1.BackendTLSModeClientAndServer}
	for _, mode := range modes {
		for _, p := range protocols {
			t.Run(string(mode)+"/"+string(p), func(t *testing.T) {
				x := xb(func(x *gwapixv1alpha1.XBackend) {
					if mode != "" {
						withTLS(mode)(x)
					}
					if p != "" {
						x.Spec.Protocol = &p
					}
				})
				tls := mode == gwapixv1alpha1.BackendTLSModeServerOnly || mode == gwapixv1alpha1.BackendTLSModeClientAndServer
				conv, e := convertXBackend(x)
				got := ""
				if e != nil {
					got = e.reason
				} else {
					fqdn := conv.b.Spec.Destination.FQDN
					typ := "-"
					if fqdn.Protocol != nil {
						typ = string(fqdn.Protocol.Type)
					}
					got = string(conv.b.Spec.Destination.Ports[0].Protocol) + "/" + typ
					if (fqdn.TLS != nil) != tls || (conv.plaintext == "") != tls {
						t.Errorf("TLS %v, plaintext note %q; want TLS %v", fqdn.TLS != nil, conv.plaintext, tls)
					}
					if conv.tcp != (p == gwapixv1alpha1.BackendProtocolTCP) {
						t.Errorf("tcp = %v", conv.tcp)
					}
				}
				if got != want[tls][p] {
					t.Errorf("got %s, want %s", got, want[tls][p])
				}
			})
		}
	}
}

// TestConvertXBackendTLS: each TLS mode and validation field lands in the Backend's
// inline TLS as a Backend author would write it.
func TestConvertXBackendTLS(t *testing.T) {
	system := egressv1alpha1.WellKnownCACertificatesSystem
	configMap, secret := "ConfigMap", "Secret"
	tests := []struct {
		name string
		edit func(*gwapixv1alpha1.XBackend)
		want *egressv1alpha1.BackendTLS
	}{
		{name: "no tls: plaintext", edit: nil, want: nil},
		{name: "mode None: plaintext", edit: withTLS(gwapixv1alpha1.BackendTLSModeNone), want: nil},
		{name: "ServerOnly without validation: the System store against the hostname", edit: withTLS(gwapixv1alpha1.BackendTLSModeServerOnly), want: &egressv1alpha1.BackendTLS{}},
		{
			name: "ServerOnly with the System store and a hostname: SNI",
			edit: func(x *gwapixv1alpha1.XBackend) {
				withTLS(gwapixv1alpha1.BackendTLSModeServerOnly)(x)
				wk := gwapiv1.WellKnownCACertificatesSystem
				x.Spec.TLS.Validation = gwapiv1.BackendTLSPolicyValidation{Hostname: "edge.example.com", WellKnownCACertificates: &wk}
			},
			want: &egressv1alpha1.BackendTLS{ServerName: ptrTo("edge.example.com"), WellKnownCACertificates: &system},
		},
		{
			name: "ServerOnly with CA bundles from a ConfigMap and a Secret, and SANs",
			edit: func(x *gwapixv1alpha1.XBackend) {
				withTLS(gwapixv1alpha1.BackendTLSModeServerOnly)(x)
				x.Spec.TLS.Validation = gwapiv1.BackendTLSPolicyValidation{
					Hostname:          "edge.example.com",
					CACertificateRefs: []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}, {Kind: "Secret", Name: "ca-next"}},
					SubjectAltNames: []gwapiv1.SubjectAltName{{Type: gwapiv1.HostnameSubjectAltNameType, Hostname: "*.example.com"},
						{Type: gwapiv1.URISubjectAltNameType, URI: "spiffe://example.com/api"}},
				}
			},
			want: &egressv1alpha1.BackendTLS{ServerName: ptrTo("edge.example.com"),
				CACertificates: []egressv1alpha1.CertificateRef{{SecretRef: egressv1alpha1.ObjectKeyReference{Name: "ca", Kind: &configMap}},
					{SecretRef: egressv1alpha1.ObjectKeyReference{Name: "ca-next", Kind: &secret}}},
				SubjectAltNames: []egressv1alpha1.SubjectAltName{{Type: egressv1alpha1.SubjectAltNameTypeHostname, Hostname: ptrTo("*.example.com")},
					{Type: egressv1alpha1.SubjectAltNameTypeURI, URI: ptrTo("spiffe://example.com/api")}}},
		},
		{
			name: "ClientAndServer: the client certificate from the XBackend's namespace",
			edit: func(x *gwapixv1alpha1.XBackend) {
				withTLS(gwapixv1alpha1.BackendTLSModeClientAndServer)(x)
				x.Spec.TLS.ClientCertificateRef.Namespace = ptrTo(gwapiv1.Namespace("apps"))
			},
			want: &egressv1alpha1.BackendTLS{ClientCertificate: &egressv1alpha1.CertificateRef{SecretRef: egressv1alpha1.ObjectKeyReference{Name: "client"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv, e := convertXBackend(xb(tt.edit))
			if e != nil {
				t.Fatalf("refused: %s: %s", e.reason, e.msg)
			}
			if diff := cmp.Diff(tt.want, conv.b.Spec.Destination.FQDN.TLS); diff != "" {
				t.Errorf("tls (-want +got):\n%s", diff)
			}
			if got := conv.b.Spec.Destination.FQDN.Hostname; got != "api.example.com" || conv.b.Name != "api" || conv.b.Namespace != "apps" || conv.b.Generation != 4 {
				t.Errorf("converted Backend %s/%s generation %d to %s", conv.b.Namespace, conv.b.Name, conv.b.Generation, got)
			}
		})
	}
}

// TestConvertXBackendRefusals: what the Backend API cannot honour is refused, with the
// reason and a message naming the XBackend's field.
func TestConvertXBackendRefusals(t *testing.T) {
	tls := func(mode gwapixv1alpha1.BackendTLSMode, edit func(*gwapixv1alpha1.BackendTLS)) func(*gwapixv1alpha1.XBackend) {
		return func(x *gwapixv1alpha1.XBackend) {
			withTLS(mode)(x)
			edit(x.Spec.TLS)
		}
	}
	tests := []struct {
		name, reason, msg string
		edit              func(*gwapixv1alpha1.XBackend)
	}{
		{"another type", "Invalid", `spec.type "Service" is not supported`, func(x *gwapixv1alpha1.XBackend) { x.Spec.Type = "Service" }},
		{"no externalHostname", "Invalid", "spec.externalHostname is required", func(x *gwapixv1alpha1.XBackend) { x.Spec.ExternalHostname = nil }},
		{"hostname in the cluster", "ForbiddenDestination", "spec.externalHostname.hostname db.ns.svc.cluster.local is under the reserved or cluster-internal suffix .cluster.local",
			func(x *gwapixv1alpha1.XBackend) { x.Spec.ExternalHostname.Hostname = "db.ns.svc.cluster.local" }},
		{"hostname of a Service", "ForbiddenDestination", "suffix .svc", func(x *gwapixv1alpha1.XBackend) { x.Spec.ExternalHostname.Hostname = "db.ns.svc" }},
		{"IP literal", "ForbiddenDestination", "is an IP address literal", func(x *gwapixv1alpha1.XBackend) { x.Spec.ExternalHostname.Hostname = "169.254.169.254" }},
		{"port 0", "Invalid", "spec.port.port 0 is not a port number", func(x *gwapixv1alpha1.XBackend) { x.Spec.Port.Port = 0 }},
		{"unknown protocol", "UnsupportedProtocol", `spec.protocol "SPDY" is not supported`, func(x *gwapixv1alpha1.XBackend) { p := gwapixv1alpha1.BackendProtocol("SPDY"); x.Spec.Protocol = &p }},
		{"H2C over TLS", "UnsupportedProtocol", "spec.protocol H2C is HTTP/2 in cleartext but spec.tls.mode originates TLS", func(x *gwapixv1alpha1.XBackend) {
			withTLS(gwapixv1alpha1.BackendTLSModeServerOnly)(x)
			p := gwapixv1alpha1.BackendProtocolH2C
			x.Spec.Protocol = &p
		}},
		{"unknown TLS mode", "Invalid", `spec.tls.mode "Opportunistic" is not supported`, tls("Opportunistic", func(*gwapixv1alpha1.BackendTLS) {})},
		{"validation under mode None", "Invalid", "spec.tls.validation is set but spec.tls.mode is None", tls(gwapixv1alpha1.BackendTLSModeNone, func(t *gwapixv1alpha1.BackendTLS) {
			t.Validation.Hostname = "api.example.com"
		})},
		{"client certificate under mode None", "Invalid", "spec.tls.clientCertificateRef is set but spec.tls.mode is None", tls(gwapixv1alpha1.BackendTLSModeNone, func(t *gwapixv1alpha1.BackendTLS) {
			t.ClientCertificateRef = &gwapiv1.SecretObjectReference{Name: "client"}
		})},
		{"client certificate under ServerOnly", "Invalid", "spec.tls.clientCertificateRef is set but spec.tls.mode is ServerOnly", tls(gwapixv1alpha1.BackendTLSModeServerOnly, func(t *gwapixv1alpha1.BackendTLS) {
			t.ClientCertificateRef = &gwapiv1.SecretObjectReference{Name: "client"}
		})},
		{"ClientAndServer without a client certificate", "Invalid", "spec.tls.mode ClientAndServer needs spec.tls.clientCertificateRef", tls(gwapixv1alpha1.BackendTLSModeClientAndServer, func(t *gwapixv1alpha1.BackendTLS) {
			t.ClientCertificateRef = nil
		})},
		{"client certificate of another kind", "InvalidKind", "spec.tls.clientCertificateRef: kind /ConfigMap is not supported", tls(gwapixv1alpha1.BackendTLSModeClientAndServer, func(t *gwapixv1alpha1.BackendTLS) {
			t.ClientCertificateRef.Kind = ptrTo(gwapiv1.Kind("ConfigMap"))
		})},
		{"client certificate in another namespace", "InvalidCertificateRef", "spec.tls.clientCertificateRef.namespace team-b", tls(gwapixv1alpha1.BackendTLSModeClientAndServer, func(t *gwapixv1alpha1.BackendTLS) {
			t.ClientCertificateRef.Namespace = ptrTo(gwapiv1.Namespace("team-b"))
		})},
		{"both CA sources", "Invalid", "spec.tls.validation sets both caCertificateRefs and wellKnownCACertificates", tls(gwapixv1alpha1.BackendTLSModeServerOnly, func(t *gwapixv1alpha1.BackendTLS) {
			wk := gwapiv1.WellKnownCACertificatesSystem
			t.Validation = gwapiv1.BackendTLSPolicyValidation{WellKnownCACertificates: &wk, CACertificateRefs: []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}}}
		})},
		{"another well-known store", "Invalid", `spec.tls.validation.wellKnownCACertificates "Mozilla" is not supported`, tls(gwapixv1alpha1.BackendTLSModeServerOnly, func(t *gwapixv1alpha1.BackendTLS) {
			wk := gwapiv1.WellKnownCACertificatesType("Mozilla")
			t.Validation.WellKnownCACertificates = &wk
		})},
		{"CA of another kind", "InvalidKind", "spec.tls.validation.caCertificateRefs[1]: kind example.com/Bundle is not supported", tls(gwapixv1alpha1.BackendTLSModeServerOnly, func(t *gwapixv1alpha1.BackendTLS) {
			t.Validation.CACertificateRefs = []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}, {Group: "example.com", Kind: "Bundle", Name: "ca"}}
		})},
		{"SNI that is an address", "Invalid", `spec.tls.validation.hostname "10.0.0.1" is an IP address literal`, tls(gwapixv1alpha1.BackendTLSModeServerOnly, func(t *gwapixv1alpha1.BackendTLS) {
			t.Validation.Hostname = "10.0.0.1"
		})},
		{"SAN without its value", "Invalid", `spec.tls.validation.subjectAltNames[0]: type "URI" needs its own field set`, tls(gwapixv1alpha1.BackendTLSModeServerOnly, func(t *gwapixv1alpha1.BackendTLS) {
			t.Validation.SubjectAltNames = []gwapiv1.SubjectAltName{{Type: gwapiv1.URISubjectAltNameType, Hostname: "api.example.com"}}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := convertXBackend(xb(tt.edit))
			if e == nil {
				t.Fatal("accepted")
			}
			if e.reason != tt.reason || !strings.Contains(e.msg, tt.msg) {
				t.Errorf("got %s: %s\nwant %s: ...%s...", e.reason, e.msg, tt.reason, tt.msg)
			}
		})
	}
}

// TestXBackendHostnames: the Backend CRD's hostname rules, which the XBackend CRD lacks.
func TestXBackendHostnames(t *testing.T) {
	accepted := []string{"api.example.com", "a-b.example.co.uk", "x1.example.io", "api.openai.com"}
	refused := map[string]string{
		"":                                       "is empty",
		"*.example.com":                          "wildcard",
		"10.0.0.1":                               "IP address literal",
		"2130706433":                             "IP address literal",
		"0x7f000001":                             "IP address literal",
		"127.1":                                  "IP address literal",
		"api.0x7f":                               "IP address literal",
		"[::1]":                                  "IP address literal",
		"fe80::1":                                "IP address literal",
		"metadata.google.internal":               "suffix .internal",
		"kubernetes.default.svc":                 "suffix .svc",
		"db.ns.svc.cluster.local":                "suffix .cluster.local",
		"printer.local":                          "suffix .local",
		"localhost":                              "suffix .localhost",
		"router.home.arpa":                       "suffix .home.arpa",
		"1.0.0.127.in-addr.arpa":                 "suffix .in-addr.arpa",
		"API.example.com":                        "character 'A'",
		"api.example.com.":                       "empty label",
		"api_v1.example.com":                     "character '_'",
		"-api.example.com":                       "starts or ends with '-'",
		"example":                                "single label",
		strings.Repeat("a", 64) + ".example.com": "longer than 63",
	}
	for _, h := range accepted {
		if e := checkExternalHostname(h); e != nil {
			t.Errorf("%q refused: %s", h, e.msg)
		}
	}
	for h, want := range refused {
		e := checkExternalHostname(h)
		if e == nil || !strings.Contains(e.msg, want) {
			t.Errorf("%q: got %v, want a refusal with %q", h, e, want)
		}
	}
}

// TestXBackendClusterEqualsBackendCluster builds the Envoy clusters (and endpoint
// assignments) of the golden input that writes one destination as a Backend and as an
// XBackend: they are equal but for their names and the origin kind in their metadata.
func TestXBackendClusterEqualsBackendCluster(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "xbackend-equivalent-backend.in.yaml"))
	assertSameClusters(t, Translate(res, addrs, opts))
}

// TestREADMEXBackendExampleGivesTheSameCluster: the Backend and the XBackend of the
// README's section "The same destination as an XBackend", put in the golden input's
// place, give equal clusters too.
func TestREADMEXBackendExampleGivesTheSameCluster(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### The same destination as an XBackend\n")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README has no yaml block under \"The same destination as an XBackend\"")
	}
	docs := strings.Split(block, "---\n")
	example := &egress.Resources{}
	if err := example.Load(strings.NewReader(docs[0] + "---\n" + docs[1])); err != nil {
		t.Fatalf("the README's Backend and XBackend: %v", err)
	}
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "xbackend-equivalent-backend.in.yaml"))
	if len(example.Backends) != 1 || len(example.XBackends) != 1 {
		t.Fatalf("the README's example holds %d Backends and %d XBackends", len(example.Backends), len(example.XBackends))
	}
	res.Backends[0].Spec, res.XBackends[0].Spec = example.Backends[0].Spec, example.XBackends[0].Spec
	assertSameClusters(t, Translate(res, addrs, opts))
}

// assertSameClusters builds the Gateway of the golden input's shape and compares the
// Backend's cluster and endpoints with the XBackend's.
func assertSameClusters(t *testing.T, result Result) {
	t.Helper()
	if len(result.Gateways) != 1 {
		t.Fatalf("%d gateways translated", len(result.Gateways))
	}
	built, err := envoyconfig.Build(result.Gateways[0], envoyconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const backendName, xbackendName = "backend/ai-apps/openai-api/https", "xbackend/ai-apps/openai-api/443"
	backend, xbackend := findCluster(t, built.Clusters, backendName), findCluster(t, built.Clusters, xbackendName)
	if kind := xbackend.GetMetadata().GetFilterMetadata()[envoyconfig.MetadataNamespace].GetFields()["kind"].GetStringValue(); kind != OriginXBackend {
		t.Errorf("the XBackend's cluster metadata says kind %q", kind)
	}
	if xbackend.GetTransportSocket() == nil || xbackend.GetEdsClusterConfig() == nil {
		t.Fatal("the XBackend's cluster originates no TLS or takes no endpoints from EDS")
	}
	if diff := cmp.Diff(anonymous(backend), anonymous(xbackend), protocmp.Transform()); diff != "" {
		t.Errorf("the XBackend's cluster differs from the Backend's (-backend +xbackend):\n%s", diff)
	}
	backendEDS, xbackendEDS := findAssignment(t, built.Endpoints, backendName), findAssignment(t, built.Endpoints, xbackendName)
	if len(xbackendEDS.GetEndpoints()) == 0 {
		t.Fatal("the XBackend's cluster has no endpoints")
	}
	backendEDS.ClusterName, xbackendEDS.ClusterName = "", ""
	if diff := cmp.Diff(backendEDS, xbackendEDS, protocmp.Transform()); diff != "" {
		t.Errorf("the XBackend's endpoints differ from the Backend's (-backend +xbackend):\n%s", diff)
	}
}

// anonymous is a copy of the cluster without its name, stat name and origin kind.
func anonymous(c *clusterv3.Cluster) *clusterv3.Cluster {
	out := proto.Clone(c).(*clusterv3.Cluster)
	out.Name, out.AltStatName = "", ""
	delete(out.GetMetadata().GetFilterMetadata()[envoyconfig.MetadataNamespace].GetFields(), "kind")
	return out
}

func findCluster(t *testing.T, clusters []*clusterv3.Cluster, name string) *clusterv3.Cluster {
	t.Helper()
	for _, c := range clusters {
		if c.GetName() == name {
			return c
		}
	}
	t.Fatalf("no cluster %s", name)
	return nil
}

func findAssignment(t *testing.T, in []*endpointv3.ClusterLoadAssignment, name string) *endpointv3.ClusterLoadAssignment {
	t.Helper()
	for _, a := range in {
		if a.GetClusterName() == name {
			return proto.Clone(a).(*endpointv3.ClusterLoadAssignment)
		}
	}
	t.Fatalf("no endpoints for %s", name)
	return nil
}

// TestXBackendNeverTakesABackendsPlace: a Backend and an XBackend of one namespace and
// name, with other hostnames and other CAs, keep their own endpoints and CA bundles,
// also when a shared Cache has remembered the Backend's translation.
func TestXBackendNeverTakesABackendsPlace(t *testing.T) {
	res := &egress.Resources{}
	load := func(yaml string) {
		t.Helper()
		if err := res.Load(strings.NewReader(yaml)); err != nil {
			t.Fatal(err)
		}
	}
	load(classYAML + `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: gw}
spec: {gatewayClassName: portcullis, listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: apps}
spec:
  parentRefs: [{name: egress, namespace: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /b}}]
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]
  - matches: [{path: {type: PathPrefix, value: /x}}]
    backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: api}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: apps}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: one.example.com, tls: {caCertificates: [{secretRef: {name: ca-one, kind: ConfigMap}}]}}
    ports: [{name: https, port: 443, protocol: HTTPS}]
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: api, namespace: apps}
spec:
  type: ExternalHostname
  externalHostname: {hostname: two.example.com}
  port: {port: 443}
  tls: {mode: ServerOnly, validation: {hostname: two.example.com, caCertificateRefs: [{group: "", kind: ConfigMap, name: ca-two}]}}
`)
	one, two := string(testpki.NewCA(t, "one").CertPEM), string(testpki.NewCA(t, "two").CertPEM)
	for name, pem := range map[string]string{"ca-one": one, "ca-two": two} {
		load("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: apps}\ndata:\n  ca.crt: |\n" + indent(pem) + "\n")
	}
	addrs := egress.Addresses{
		"one.example.com": {State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr("203.0.113.1")}}},
		"two.example.com": {State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr("203.0.113.2")}}},
	}
	opts := Options{Cache: NewCache()}
	for round := range 2 { // the second translation may reuse the Backend's memo
		gw := Translate(res, addrs, opts).Gateways[0]
		clusters := map[string]*ir.Cluster{}
		for _, c := range gw.Clusters {
			clusters[c.Name] = c
		}
		secrets := map[string]string{}
		for _, s := range gw.Secrets {
			secrets[s.Name] = string(s.Certificate)
		}
		b, x := clusters["backend/apps/api/https"], clusters["xbackend/apps/api/443"]
		if len(b.Endpoints) != 1 || b.Endpoints[0].Address != "203.0.113.1" || len(x.Endpoints) != 1 || x.Endpoints[0].Address != "203.0.113.2" {
			t.Fatalf("round %d: Backend endpoints %v, XBackend endpoints %v", round, b.Endpoints, x.Endpoints)
		}
		if b.TLS == nil || x.TLS == nil || b.TLS.CASecret == x.TLS.CASecret {
			t.Fatalf("round %d: the Backend and the XBackend share a CA secret: %+v %+v", round, b.TLS, x.TLS)
		}
		if secrets[b.TLS.CASecret] != one || secrets[x.TLS.CASecret] != two {
			t.Errorf("round %d: CA bundles crossed: %s holds CA one: %v, %s holds CA two: %v", round,
				b.TLS.CASecret, secrets[b.TLS.CASecret] == one, x.TLS.CASecret, secrets[x.TLS.CASecret] == two)
		}
		if x.Origin.Kind != OriginXBackend || b.Origin.Kind != ir.OriginBackend {
			t.Errorf("round %d: origins %+v and %+v", round, b.Origin, x.Origin)
		}
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ")
}
