package envoyconfig

import (
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// validGateway is a small IR touching listeners, TLS, routes, clusters and every secret
// kind; each error case below breaks one thing in a fresh copy.
func validGateway() ir.Gateway {
	return ir.Gateway{
		Name: "default/egress",
		Listeners: []ir.Listener{{
			Name: "https-10443",
			Port: 10443,
			TLS:  &ir.ListenerTLS{CertificateSecrets: []string{"tls/listener"}},
			VirtualHosts: []ir.VirtualHost{{
				Name:    "api",
				Domains: []string{"api.example.com"},
				Routes: []ir.Route{{
					Name:     "r0",
					Match:    ir.RouteMatch{PathType: ir.PathPrefix, Path: "/"},
					Backends: []ir.WeightedCluster{{Cluster: "backend/default/api/443", Weight: 1}},
				}},
			}},
		}},
		Clusters: []*ir.Cluster{{
			Name:       "backend/default/api/443",
			Protocol:   ir.ProtocolHTTP1,
			Endpoints:  []ir.Endpoint{{Address: "192.0.2.1", Port: 443}},
			TLS:        &ir.UpstreamTLS{SNI: "api.example.com", CASecret: "ca/api"},
			Credential: &ir.Credential{Secret: "generic/token"},
		}},
		Secrets: []ir.Secret{
			{Name: "ca/api", Kind: ir.SecretCACertificate, Certificate: []byte("ca-bundle")},
			{Name: "generic/token", Kind: ir.SecretGeneric, Value: []byte("Bearer do-not-print")},
			{Name: "tls/listener", Kind: ir.SecretTLSCertificate, Certificate: []byte("chain"), PrivateKey: []byte("do-not-print-key")},
		},
	}
}

func TestValidGatewayBuilds(t *testing.T) {
	if _, err := Build(validGateway(), Options{}); err != nil {
		t.Fatalf("Build: %v", err)
	}
	if _, err := Static(validGateway(), Options{}, 19000); err != nil {
		t.Fatalf("Static: %v", err)
	}
}

func TestBuildRejectsInvalidIR(t *testing.T) {
	route := func(gw *ir.Gateway) *ir.Route { return &gw.Listeners[0].VirtualHosts[0].Routes[0] }
	cluster := func(gw *ir.Gateway) *ir.Cluster { return gw.Clusters[0] }
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		break_  func(gw *ir.Gateway)
		wantErr string
	}{
		{"route to an undefined cluster", func(gw *ir.Gateway) { route(gw).Backends[0].Cluster = "backend/x/y/1" }, `backend cluster "backend/x/y/1" is not defined`},
		{"cluster defined twice", func(gw *ir.Gateway) { gw.Clusters = append(gw.Clusters, gw.Clusters[0]) }, "defined twice"},
		{"secret defined twice", func(gw *ir.Gateway) { gw.Secrets = append(gw.Secrets, gw.Secrets[0]) }, "defined twice"},
		{"listener certificate undefined", func(gw *ir.Gateway) { gw.Listeners[0].TLS.CertificateSecrets = []string{"tls/nope"} }, `secret "tls/nope" is not defined`},
		{"listener certificate of the wrong kind", func(gw *ir.Gateway) { gw.Listeners[0].TLS.CertificateSecrets = []string{"generic/token"} }, "is a Generic, want a TLSCertificate"},
		{"TLS listener without certificates", func(gw *ir.Gateway) { gw.Listeners[0].TLS.CertificateSecrets = nil }, "without certificate secrets"},
		{"listener port 0", func(gw *ir.Gateway) { gw.Listeners[0].Port = 0 }, "out of range"},
		{"listener port above 65535", func(gw *ir.Gateway) { gw.Listeners[0].Port = 70000 }, "out of range"},
		{"duplicate domain across virtual hosts", func(gw *ir.Gateway) {
			vh := gw.Listeners[0].VirtualHosts[0]
			vh.Name = "api-2"
			gw.Listeners[0].VirtualHosts = append(gw.Listeners[0].VirtualHosts, vh)
		}, `domain "api.example.com" is in virtual hosts`},
		{"no outcome", func(gw *ir.Gateway) { route(gw).Backends = nil }, "exactly one of redirect, direct response and backends, have 0"},
		{"redirect and backends", func(gw *ir.Gateway) { route(gw).Redirect = &ir.Redirect{StatusCode: 302} }, "have 2"},
		{"redirect status 304", func(gw *ir.Gateway) {
			route(gw).Backends, route(gw).Redirect = nil, &ir.Redirect{StatusCode: 304}
		}, "redirect status 304"},
		{"direct response status 99", func(gw *ir.Gateway) {
			route(gw).Backends, route(gw).DirectResponse = nil, &ir.DirectResponse{StatusCode: 99}
		}, "direct response status 99"},
		{"unknown path match type", func(gw *ir.Gateway) { route(gw).Match.PathType = "Glob" }, `unknown path match type "Glob"`},
		{"invalid path regex", func(gw *ir.Gateway) { route(gw).Match = ir.RouteMatch{PathType: ir.PathRegex, Path: "^/(unclosed"} }, "invalid RE2 pattern"},
		{"invalid header regex", func(gw *ir.Gateway) {
			route(gw).Match.Headers = []ir.ValueMatch{{Name: "x", Type: ir.MatchRegex, Value: "[z-a]"}}
		}, "invalid RE2 pattern"},
		{"unknown header match type", func(gw *ir.Gateway) {
			route(gw).Match.Headers = []ir.ValueMatch{{Name: "x", Type: "Prefix", Value: "a"}}
		}, `unknown match type "Prefix"`},
		{"prefix rewrite without a prefix match", func(gw *ir.Gateway) {
			route(gw).Match = ir.RouteMatch{PathType: ir.PathExact, Path: "/a"}
			route(gw).Rewrite = &ir.URLRewrite{PrefixPath: str("/b")}
		}, "needs a PathPrefix match"},
		{"full and prefix rewrite", func(gw *ir.Gateway) { route(gw).Rewrite = &ir.URLRewrite{PrefixPath: str("/b"), FullPath: str("/c")} }, "both a full path and a prefix"},
		{"route sets Host", func(gw *ir.Gateway) {
			route(gw).RequestHeaders = &ir.HeaderMutation{Set: []ir.Header{{Name: "Host", Value: "x"}}}
		}, `header "Host" cannot be modified`},
		{"route removes a pseudo-header", func(gw *ir.Gateway) { route(gw).ResponseHeaders = &ir.HeaderMutation{Remove: []string{":status"}} }, `header ":status" cannot be modified`},
		{"backend filter sets :authority", func(gw *ir.Gateway) {
			route(gw).Backends[0].RequestHeaders = &ir.HeaderMutation{Add: []ir.Header{{Name: ":authority", Value: "x"}}}
		}, `header ":authority" cannot be modified`},
		{"cluster extension removes Host", func(gw *ir.Gateway) { cluster(gw).RequestHeaders = &ir.HeaderMutation{Remove: []string{"host"}} }, `header "host" cannot be modified`},
		{"header value with a line break", func(gw *ir.Gateway) {
			route(gw).RequestHeaders = &ir.HeaderMutation{Set: []ir.Header{{Name: "x-a", Value: "a\r\nx-injected: 1"}}}
		}, "invalid route configuration"},
		{"weights above uint32", func(gw *ir.Gateway) {
			route(gw).Backends = []ir.WeightedCluster{{Cluster: cluster(gw).Name, Weight: 1 << 31}, {Cluster: cluster(gw).Name, Weight: 1 << 31}}
		}, "more than Envoy's limit"},
		{"unknown protocol", func(gw *ir.Gateway) { cluster(gw).Protocol = "SPDY" }, `unknown upstream protocol "SPDY"`},
		{"empty protocol", func(gw *ir.Gateway) { cluster(gw).Protocol = "" }, `unknown upstream protocol ""`},
		{"endpoint is a hostname", func(gw *ir.Gateway) { cluster(gw).Endpoints[0].Address = "api.example.com" }, "is not an IP address"},
		{"endpoint port 0", func(gw *ir.Gateway) { cluster(gw).Endpoints[0].Port = 0 }, "out of range"},
		{"no server verification", func(gw *ir.Gateway) { cluster(gw).TLS.CASecret = "" }, "have 0"},
		{"two server verifications", func(gw *ir.Gateway) { cluster(gw).TLS.SystemCA = true }, "have 2"},
		{"CA secret undefined", func(gw *ir.Gateway) { cluster(gw).TLS.CASecret = "ca/nope" }, `secret "ca/nope" is not defined`},
		{"CA secret of the wrong kind", func(gw *ir.Gateway) { cluster(gw).TLS.CASecret = "tls/listener" }, "is a TLSCertificate, want a CACertificate"},
		{"client certificate of the wrong kind", func(gw *ir.Gateway) { cluster(gw).TLS.ClientCertificateSecret = "ca/api" }, "is a CACertificate, want a TLSCertificate"},
		{"unknown SAN type", func(gw *ir.Gateway) {
			cluster(gw).TLS.SubjectAltNames = []ir.SubjectAltName{{Type: "IP", Value: "1.2.3.4"}}
		}, `unknown subject alt name type "IP"`},
		{"TLS 1.1", func(gw *ir.Gateway) { cluster(gw).TLS.MinVersion = "1.1" }, `unsupported TLS version "1.1"`},
		{"TLS min above max", func(gw *ir.Gateway) { cluster(gw).TLS.MinVersion, cluster(gw).TLS.MaxVersion = "1.3", "1.2" }, "minimum version is above the maximum"},
		{"credential secret undefined", func(gw *ir.Gateway) { cluster(gw).Credential.Secret = "generic/nope" }, `secret "generic/nope" is not defined`},
		{"credential secret of the wrong kind", func(gw *ir.Gateway) { cluster(gw).Credential.Secret = "ca/api" }, "is a CACertificate, want a Generic"},
		{"TLS certificate without key", func(gw *ir.Gateway) { gw.Secrets[2].PrivateKey = nil }, "needs a chain and a private key"},
		{"generic secret without value", func(gw *ir.Gateway) { gw.Secrets[1].Value = nil }, "needs a value"},
		{"unknown secret kind", func(gw *ir.Gateway) {
			gw.Secrets = append(gw.Secrets, ir.Secret{Name: "x/unused", Kind: "Opaque", Value: []byte("v")})
		}, `unknown kind "Opaque"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gw := validGateway()
			tc.break_(&gw)
			_, err := Build(gw, Options{})
			if err == nil {
				t.Fatalf("Build accepted the IR, want an error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Build error %q, want it to contain %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "do-not-print") {
				t.Errorf("Build error leaks secret data: %q", err)
			}
			if _, serr := Static(gw, Options{}, 19000); serr == nil {
				t.Errorf("Static accepted the IR that Build rejects")
			}
		})
	}
}

func TestStaticRejectsAdminPortOutOfRange(t *testing.T) {
	if _, err := Static(validGateway(), Options{}, 70000); err == nil {
		t.Fatal("Static accepted admin port 70000")
	}
}

func TestEmptyGatewayBuildsNothing(t *testing.T) {
	res, err := Build(ir.Gateway{Name: "default/empty"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Listeners) + len(res.Routes) + len(res.Clusters) + len(res.Endpoints) + len(res.Secrets); n != 0 {
		t.Errorf("an empty IR gave %d resources", n)
	}
}
