package envoyconfig

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// echo is what the test upstreams report about the request they received.
type echo struct {
	Upstream string      `json:"upstream"`
	URI      string      `json:"uri"`
	Host     string      `json:"host"`
	Proto    string      `json:"proto"`
	SNI      string      `json:"sni"`
	Header   http.Header `json:"header"`
}

func echoHandler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := echo{Upstream: name, URI: r.RequestURI, Host: r.Host, Proto: r.Proto, Header: r.Header}
		if r.TLS != nil {
			e.SNI = r.TLS.ServerName
		}
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(e)
	})
}

// upstreams are the servers Envoy forwards to in the data-path test.
type upstreams struct {
	plain     *httptest.Server // HTTP/1.1
	h2c       *httptest.Server // HTTP/2 with prior knowledge, no TLS
	api       *httptest.Server // TLS, h2 and http/1.1, certificate for api.example.com by the test CA
	deep      *httptest.Server // TLS, certificate for a.b.example.com by the test CA
	untrusted *httptest.Server // TLS, httptest's own certificate (not from the test CA)
	ws        *httptest.Server // accepts any Upgrade with 101 and then echoes bytes
	mtls      *httptest.Server // TLS for api.example.com, requires a client certificate from the test CA
	wild      *httptest.Server // TLS, wildcard certificate for *.example.com by the test CA
}

// upgradeHandler answers an Upgrade request with 101 and echoes what follows.
func upgradeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, rw)
	})
}

func startUpstreams(t *testing.T) upstreams {
	t.Helper()
	ca := sharedCA(t)
	u := upstreams{plain: httptest.NewServer(echoHandler("plain"))}
	t.Cleanup(u.plain.Close)

	u.h2c = httptest.NewUnstartedServer(echoHandler("h2c"))
	u.h2c.Config.Protocols = new(http.Protocols)
	u.h2c.Config.Protocols.SetUnencryptedHTTP2(true)
	u.h2c.Start()
	t.Cleanup(u.h2c.Close)

	tlsServer := func(name string, cert *tls.Certificate, clientCAs ...[]byte) *httptest.Server {
		s := httptest.NewUnstartedServer(echoHandler(name))
		s.EnableHTTP2 = true
		if cert != nil {
			s.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		}
		if len(clientCAs) > 0 {
			s.TLS.ClientCAs = x509.NewCertPool()
			s.TLS.ClientCAs.AppendCertsFromPEM(clientCAs[0])
			s.TLS.ClientAuth = tls.RequireAndVerifyClientCert
		}
		s.StartTLS()
		t.Cleanup(s.Close)
		return s
	}
	apiCert, deepCert := ca.tlsCertificate(t, "api.example.com"), ca.tlsCertificate(t, "a.b.example.com")
	u.api = tlsServer("api", &apiCert)
	u.deep = tlsServer("deep", &deepCert)
	u.untrusted = tlsServer("untrusted", nil)
	u.mtls = tlsServer("mtls", &apiCert, ca.certPEM)
	wildCert := ca.tlsCertificate(t, "*.example.com")
	u.wild = tlsServer("wild", &wildCert)
	u.ws = httptest.NewServer(upgradeHandler())
	t.Cleanup(u.ws.Close)
	return u
}

// prefixRewriteTable is Gateway API's ReplacePrefixMatch table (plus a "/" match): the
// request path, the matched prefix, the replacement and the path the upstream must see.
var prefixRewriteTable = []struct{ path, prefix, replacement, want string }{
	{"/foo/bar", "/foo", "/xyz", "/xyz/bar"},
	{"/foo/bar", "/foo", "/xyz/", "/xyz/bar"},
	{"/foo/bar", "/foo/", "/xyz", "/xyz/bar"},
	{"/foo/bar", "/foo/", "/xyz/", "/xyz/bar"},
	{"/foo", "/foo", "/xyz", "/xyz"},
	{"/foo/", "/foo", "/xyz", "/xyz/"},
	{"/foo/bar", "/foo", "", "/bar"},
	{"/foo/", "/foo", "", "/"},
	{"/foo", "/foo", "", "/"},
	{"/foo/", "/foo", "/", "/"},
	{"/foo", "/foo", "/", "/"},
	{"/foo/bar?q=1", "/foo", "/", "/bar?q=1"},
	{"/bar", "/", "/xyz", "/xyz/bar"},
}

// prefixRewriteHosts has one virtual host per row of prefixRewriteTable, named
// row<i>.test, forwarding to the plain upstream with that rewrite.
func prefixRewriteHosts() []ir.VirtualHost {
	var out []ir.VirtualHost
	for i, row := range prefixRewriteTable {
		host := "row" + strconv.Itoa(i) + ".test"
		out = append(out, ir.VirtualHost{Name: host, Domains: []string{host}, Routes: []ir.Route{{
			Name:     host,
			Match:    ir.RouteMatch{PathType: ir.PathPrefix, Path: row.prefix},
			Rewrite:  &ir.URLRewrite{PrefixPath: &row.replacement},
			Backends: []ir.WeightedCluster{{Cluster: "plain", Weight: 1}},
		}}})
	}
	return out
}

// dataPathGateway routes each path prefix of one HTTP listener to a feature under test.
func dataPathGateway(t *testing.T, port, tlsPort uint32, u upstreams) ir.Gateway {
	t.Helper()
	str := func(s string) *string { return &s }
	fwd := func(prefix, cluster string) ir.Route {
		return ir.Route{
			Name:     "dp" + prefix,
			Match:    ir.RouteMatch{PathType: ir.PathPrefix, Path: prefix},
			Backends: []ir.WeightedCluster{{Cluster: cluster, Weight: 1}},
		}
	}
	full, strip, v1 := fwd("/full", "plain"), fwd("/strip", "plain"), fwd("/v1/", "plain")
	full.Rewrite = &ir.URLRewrite{FullPath: str("/replaced"), Hostname: "rewritten.example"}
	strip.Rewrite = &ir.URLRewrite{PrefixPath: str("/")}
	v1.Rewrite = &ir.URLRewrite{PrefixPath: str("/v2")}
	layered := fwd("/layers", "extended")
	layered.RequestHeaders = &ir.HeaderMutation{
		Set:    []ir.Header{{Name: "x-order", Value: "route"}, {Name: "x-ext", Value: "route"}},
		Remove: []string{"x-order"}, // removals come first: the set value stays
	}
	layered.Backends[0].RequestHeaders = &ir.HeaderMutation{Set: []ir.Header{{Name: "x-order", Value: "backend"}, {Name: "x-backend", Value: "yes"}}}
	routes := []ir.Route{
		full, strip, v1, layered,
		fwd("/api", "plain"),
		fwd("/cred", "credential"),
		{Name: "dp/invalid", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/invalid"}, InvalidWeight: 1},
		fwd("/h2c", "h2c"),
		fwd("/h2tls", "api-h2"),
		fwd("/tls-wildcard", "api-wildcard"),
		fwd("/tls-wrong-san", "api-wrong-san"),
		fwd("/tls-two-labels", "deep-wildcard"),
		fwd("/insecure", "untrusted-insecure"),
		fwd("/verified-untrusted", "untrusted-verified"),
		fwd("/empty", "empty"),
		fwd("/mtls", "mtls"),
		fwd("/wildcard-cert", "wild-sni"),
		fwd("/wildcard-cert-wildcard-san", "wild-wildcard"),
		fwd("/no-client-cert", "mtls-without-cert"),
		fwd("/ws", "ws"),
		fwd("/no-ws", "ws-as-http1"),
		{Name: "dp/redirect", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/redirect"}, Redirect: &ir.Redirect{PrefixPath: str("/"), StatusCode: 308}},
		{Name: "dp/redirect-80", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/redirect-80"}, Redirect: &ir.Redirect{Port: 80, StatusCode: 302}},
		{Name: "dp/redirect-https", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/redirect-https"}, Redirect: &ir.Redirect{Scheme: "https", Port: 443, StatusCode: 302}},
		{Name: "dp/redirect-8443", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/redirect-8443"}, Redirect: &ir.Redirect{Scheme: "https", Port: 8443, StatusCode: 302}},
		{Name: "dp/fallback", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/"}, DirectResponse: &ir.DirectResponse{StatusCode: 404, Body: "no route"}},
	}
	at := func(s *httptest.Server) []ir.Endpoint {
		addr := s.Listener.Addr().(*net.TCPAddr)
		return []ir.Endpoint{{Address: addr.IP.String(), Port: uint32(addr.Port)}}
	}
	caTLS := func(sni string, sans ...ir.SubjectAltName) *ir.UpstreamTLS {
		return &ir.UpstreamTLS{SNI: sni, CASecret: "ca/test", SubjectAltNames: sans}
	}
	wildcard := ir.SubjectAltName{Type: "DNS", Value: "*.example.com"}
	return ir.Gateway{
		Name: "test/datapath",
		Listeners: []ir.Listener{{
			Name: "http", Port: port,
			VirtualHosts: append(prefixRewriteHosts(), ir.VirtualHost{Name: "all", Domains: []string{"*"}, Routes: routes}),
		}, {
			Name: "https", Port: tlsPort,
			TLS: &ir.ListenerTLS{CertificateSecrets: []string{"tls/a", "tls/b"}},
			VirtualHosts: []ir.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: []ir.Route{{
				Name: "dp/tls", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/"},
				DirectResponse: &ir.DirectResponse{StatusCode: 200, Body: "terminated"},
			}}}},
		}},
		Clusters: []*ir.Cluster{
			{Name: "api-h2", Protocol: ir.ProtocolHTTP2, Endpoints: at(u.api), TLS: &ir.UpstreamTLS{SNI: "api.example.com", SystemCA: true}},
			{Name: "api-wildcard", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.api), TLS: caTLS("api.example.com", wildcard)},
			{Name: "api-wrong-san", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.api), TLS: caTLS("api.example.com", ir.SubjectAltName{Type: "DNS", Value: "*.other.com"})},
			{
				Name: "credential", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.plain),
				Credential: &ir.Credential{Secret: "generic/token"},
			},
			{Name: "deep-wildcard", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.deep), TLS: caTLS("a.b.example.com", wildcard)},
			{Name: "empty", Protocol: ir.ProtocolHTTP1},
			{
				Name: "extended", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.plain),
				RequestHeaders: &ir.HeaderMutation{Set: []ir.Header{{Name: "x-ext", Value: "cluster 100%"}}, Remove: []string{"x-drop"}},
				Credential:     &ir.Credential{Header: "X-Api-Key", Secret: "generic/key"},
			},
			{Name: "h2c", Protocol: ir.ProtocolHTTP2, Endpoints: at(u.h2c)},
			{Name: "plain", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.plain)},
			{Name: "untrusted-insecure", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.untrusted), TLS: &ir.UpstreamTLS{SNI: "example.com", InsecureSkipVerify: true}},
			{Name: "ws", Protocol: ir.ProtocolWebSocket, Endpoints: at(u.ws)},
			{Name: "mtls", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.mtls), TLS: &ir.UpstreamTLS{SNI: "api.example.com", CASecret: "ca/test", ClientCertificateSecret: "tls/client"}},
			{Name: "wild-sni", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.wild), TLS: caTLS("api.example.com")},
			{Name: "wild-wildcard", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.wild), TLS: caTLS("api.example.com", wildcard)},
			{Name: "mtls-without-cert", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.mtls), TLS: caTLS("api.example.com")},
			{Name: "ws-as-http1", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.ws)},
			{Name: "untrusted-verified", Protocol: ir.ProtocolHTTP1, Endpoints: at(u.untrusted), TLS: caTLS("example.com")},
		},
		Secrets: []ir.Secret{
			{Name: "ca/test", Kind: ir.SecretCACertificate, Certificate: sharedCA(t).certPEM},
			{Name: "generic/key", Kind: ir.SecretGeneric, Value: []byte("k3y-value")},
			{Name: "generic/token", Kind: ir.SecretGeneric, Value: []byte("Bearer s3cr3t")},
			listenerCert(t, "tls/a", "a.example.test"),
			listenerCert(t, "tls/b", "b.example.test"),
			listenerCert(t, "tls/client", "client.example.test"),
		},
	}
}

// TestDataPath runs the static bootstrap in a real Envoy against local upstreams and
// checks the claims the config makes about traffic: path rewrites, header layering,
// upstream filters, the invalid share, segment prefixes, HTTP/2 both ways, and TLS
// verification (CA, single-label wildcard SAN, insecure skip).
func TestDataPath(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	u := startUpstreams(t)
	port, tlsPort := freePort(t), freePort(t)
	// The system trust store is the test CA, so SystemCA clusters are verified for real.
	opts := Options{SystemCAFile: writeFile(t, "system-ca.pem", sharedCA(t).certPEM)}
	runEnvoy(t, envoy, staticBootstrapFile(t, dataPathGateway(t, port, tlsPort, u), opts))
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	waitReady(t, base+"/api")

	tests := []struct {
		name       string
		path       string
		header     http.Header
		wantStatus int
		check      func(t *testing.T, e echo)
	}{
		{"full path rewrite keeps the query and rewrites Host", "/full/a/b?q=1", nil, 200, func(t *testing.T, e echo) {
			want(t, "uri", e.URI, "/replaced?q=1")
			want(t, "host", e.Host, "rewritten.example")
		}},
		{"prefix replaced by / drops the prefix and its slash", "/strip/x/y?q=1", nil, 200, func(t *testing.T, e echo) { want(t, "uri", e.URI, "/x/y?q=1") }},
		{"prefix replaced by / on the bare prefix gives /", "/strip", nil, 200, func(t *testing.T, e echo) { want(t, "uri", e.URI, "/") }},
		{"prefix /v1/ replaced by /v2", "/v1/items", nil, 200, func(t *testing.T, e echo) { want(t, "uri", e.URI, "/v2/items") }},
		{"path prefix matches a whole segment", "/api/x", nil, 200, func(t *testing.T, e echo) { want(t, "upstream", e.Upstream, "plain") }},
		{"no internal address or Envoy header leaks upstream", "/api", nil, 200, func(t *testing.T, e echo) {
			for name := range e.Header {
				if strings.EqualFold(name, "X-Forwarded-For") || strings.HasPrefix(strings.ToLower(name), "x-envoy-") {
					t.Errorf("upstream received %s: %v", name, e.Header[name])
				}
			}
		}},
		{"path prefix does not match a longer segment", "/apix", nil, 404, nil},
		{"route header beats backend header; cluster extension and credential apply last", "/layers",
			http.Header{"X-Drop": {"1"}, "X-Api-Key": {"client-key"}}, 200, func(t *testing.T, e echo) {
				want(t, "x-order", e.Header.Get("x-order"), "route")
				want(t, "x-backend", e.Header.Get("x-backend"), "yes")
				want(t, "x-ext", e.Header.Get("x-ext"), "cluster 100%")
				want(t, "x-drop", e.Header.Get("x-drop"), "")
				want(t, "x-api-key", strings.Join(e.Header.Values("x-api-key"), ","), "k3y-value")
			}},
		{"credential overwrites the client's Authorization", "/cred", http.Header{"Authorization": {"Bearer client"}}, 200, func(t *testing.T, e echo) {
			want(t, "authorization", strings.Join(e.Header.Values("authorization"), ","), "Bearer s3cr3t")
		}},
		{"invalid backend share gets 500", "/invalid", nil, 500, nil},
		{"h2c cluster speaks HTTP/2 in plaintext", "/h2c", nil, 200, func(t *testing.T, e echo) { want(t, "proto", e.Proto, "HTTP/2.0") }},
		{"HTTP2 TLS cluster verified by the system CA negotiates h2 and sends SNI", "/h2tls", nil, 200, func(t *testing.T, e echo) {
			want(t, "proto", e.Proto, "HTTP/2.0")
			want(t, "sni", e.SNI, "api.example.com")
		}},
		{"wildcard SAN accepts a one-label name", "/tls-wildcard", nil, 200, func(t *testing.T, e echo) { want(t, "proto", e.Proto, "HTTP/1.1") }},
		{"wrong SAN is refused", "/tls-wrong-san", nil, 503, nil},
		{"wildcard SAN refuses a two-label name", "/tls-two-labels", nil, 503, nil},
		{"insecure skip verify accepts an unknown CA", "/insecure", nil, 200, func(t *testing.T, e echo) { want(t, "upstream", e.Upstream, "untrusted") }},
		{"CA verification refuses an unknown CA", "/verified-untrusted", nil, 503, nil},
		{"cluster without endpoints gets 503", "/empty", nil, 503, nil},
		{"wildcard certificate satisfies the SNI as SAN", "/wildcard-cert", nil, 200, func(t *testing.T, e echo) { want(t, "upstream", e.Upstream, "wild") }},
		{"wildcard certificate satisfies a wildcard SAN", "/wildcard-cert-wildcard-san", nil, 200, func(t *testing.T, e echo) { want(t, "upstream", e.Upstream, "wild") }},
		{"client certificate is presented for mutual TLS", "/mtls", nil, 200, func(t *testing.T, e echo) { want(t, "upstream", e.Upstream, "mtls") }},
		{"server requiring a client certificate refuses a cluster without one", "/no-client-cert", nil, 503, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, base+tc.path, tc.header)
			if status != tc.wantStatus {
				t.Fatalf("GET %s: status %d, want %d; body %s", tc.path, status, tc.wantStatus, body)
			}
			if tc.check == nil {
				return
			}
			var e echo
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("GET %s: not an echo: %s", tc.path, body)
			}
			tc.check(t, e)
		})
	}

	t.Run("the invalid backend share's 500 says why in one line; other errors keep their own body", func(t *testing.T) {
		status, body := get(t, base+"/invalid", nil)
		want(t, "status of the invalid share", strconv.Itoa(status), "500")
		want(t, "body of the invalid share", string(body), "backend not available: invalid backendRef\n")
		status, body = get(t, base+"/empty", nil)
		if status != 503 || strings.Contains(string(body), "backend not available") {
			t.Errorf("a cluster without endpoints: status %d, body %q; want Envoy's own 503", status, body)
		}
	})
	t.Run("websocket upgrade only on routes to WebSocket clusters", func(t *testing.T) {
		want(t, "status line to a WebSocket cluster", upgrade(t, port, "/ws"), "HTTP/1.1 101 Switching Protocols")
		if got := upgrade(t, port, "/no-ws"); strings.Contains(got, " 101 ") {
			t.Errorf("upgrade to an HTTP1 cluster was allowed: %q", got)
		}
	})
	t.Run("Gateway API prefix replacement table", func(t *testing.T) {
		for i, row := range prefixRewriteTable {
			status, body := get(t, base+row.path, http.Header{"Host": {"row" + strconv.Itoa(i) + ".test"}})
			var e echo
			if status != 200 || json.Unmarshal(body, &e) != nil {
				t.Errorf("%s (prefix %q, replacement %q): status %d, body %s", row.path, row.prefix, row.replacement, status, body)
				continue
			}
			want(t, fmt.Sprintf("%s with prefix %q replaced by %q", row.path, row.prefix, row.replacement), e.URI, row.want)
		}
	})
	t.Run("redirects", func(t *testing.T) {
		for _, tc := range []struct{ host, path, status, location string }{
			// A Host without a port, as clients send to a gateway on 80: the translator
			// sets Redirect.Port when the Gateway listener port must appear, and a
			// scheme's default port is left out.
			{"127.0.0.1", "/redirect/a/b?x=1", "308", "http://127.0.0.1/a/b?x=1"},
			{"127.0.0.1", "/redirect-80", "302", "http://127.0.0.1/redirect-80"},
			{"127.0.0.1", "/redirect-https", "302", "https://127.0.0.1/redirect-https"},
			{"127.0.0.1", "/redirect-8443", "302", "https://127.0.0.1:8443/redirect-8443"},
			// Host ports are kept (Gateway API), so a redirect that sets no other port
			// keeps the one the client named.
			{"127.0.0.1:8080", "/redirect/a/b?x=1", "308", "http://127.0.0.1:8080/a/b?x=1"},
			{"127.0.0.1:8080", "/redirect-8443", "302", "https://127.0.0.1:8443/redirect-8443"},
		} {
			status, location := redirect(t, base+tc.path, tc.host)
			want(t, tc.host+tc.path+" status", status, tc.status)
			want(t, tc.host+tc.path+" location", location, tc.location)
		}
	})
	t.Run("TLS listener picks the certificate by SNI", func(t *testing.T) {
		for _, name := range []string{"a.example.test", "b.example.test"} {
			want(t, "certificate for SNI "+name, servedCertName(t, tlsPort, name), name)
		}
	})
}

// redirect GETs rawURL without following redirects.
func redirect(t *testing.T, rawURL, host string) (status, location string) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode), resp.Header.Get("Location")
}

// listenerCert is a TLSCertificate secret for name, issued by the test CA.
func listenerCert(t *testing.T, secretName, dnsName string) ir.Secret {
	t.Helper()
	certPEM, keyPEM := sharedCA(t).leaf(t, []string{dnsName})
	return ir.Secret{Name: secretName, Kind: ir.SecretTLSCertificate, Certificate: certPEM, PrivateKey: keyPEM}
}

// servedCertName connects with TLS and SNI sni, verifies the chain against the test CA
// and returns the DNS name of the certificate served.
func servedCertName(t *testing.T, port uint32, sni string) string {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(sharedCA(t).certPEM)
	conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(port)), &tls.Config{ServerName: sni, RootCAs: pool})
	if err != nil {
		t.Fatalf("TLS to the listener with SNI %s: %v", sni, err)
	}
	defer conn.Close()
	return strings.Join(conn.ConnectionState().PeerCertificates[0].DNSNames, ",")
}

// upgrade sends a WebSocket upgrade request through Envoy and returns the status line.
func upgrade(t *testing.T, port uint32, path string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(int(port)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: ws.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", path)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the upgrade answer: %v", err)
	}
	return strings.TrimSpace(line)
}

func want(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func get(t *testing.T, rawURL string, header http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Host = header.Get("Host")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// runEnvoy starts Envoy on the bootstrap and stops it when the test ends. Hot restart is
// off so that it shares no memory or socket with other Envoys on the machine.
func runEnvoy(t *testing.T, envoy, bootstrap string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var log bytes.Buffer
	cmd := exec.CommandContext(ctx, envoy, "-c", bootstrap, "--disable-hot-restart", "--concurrency", "1", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("Envoy log:\n%s", log.String())
		}
	})
}

// waitReady polls until Envoy answers on the listener (its static config is loaded).
func waitReady(t *testing.T, rawURL string) {
	t.Helper()
	u, _ := url.Parse(rawURL)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u.String()); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("Envoy did not answer on %s within 15s", rawURL)
}

// freePort returns a TCP port that was free a moment ago, below the kernel's ephemeral
// range (xdstest.FreePort): a port the kernel handed out for ":0" may be handed again as
// the source port of another package's connection before Envoy binds it
// (TestTenantIsolationDataPath's listener found its port taken once, 2026-11-29).
func freePort(t *testing.T) uint32 {
	t.Helper()
	return xdstest.FreePort(t)
}

// staticBootstrapFile writes gw's static bootstrap (admin on a free port) as JSON and
// returns its path, for a test that runs Envoy on it.
func staticBootstrapFile(t *testing.T, gw ir.Gateway, opts Options) string {
	t.Helper()
	bs, err := Static(gw, opts, freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	j, err := protojson.Marshal(bs)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "bootstrap.json", j)
}
