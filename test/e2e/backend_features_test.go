package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/internal/testpki"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// featureBackendYAML is an FQDN Backend whose protocol, port protocol, tls block and
// extensions each test supplies through .Extra (already indented YAML).
const featureBackendYAML = `
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: {{.Name}}, namespace: apps}
spec:
{{.Extra}}
`

// credentialValue is what the upstream must receive and Envoy's config dump must never show.
const credentialValue = "sk-e2e-7f3c9a1d5b"

func TestCredentialInjectionReachesUpstreamOnlyBySDS(t *testing.T) {
	up := testupstream.Start(t, testupstream.Options{Name: "api"})
	d := startDataPath(t)
	s := scenario{Port: d.port, UpPort: up.Port(), Name: "api", Host: "creds.e2e.test", Extra: fmt.Sprintf(`  destination:
    type: FQDN
    fqdn: {hostname: creds.e2e.test}
    ports: [{name: http, port: %d, protocol: HTTP}]
  extensions:
  - type: portcullis.io/credential-injection
    config: {secretRef: {name: api-token}, key: token, prefix: "Bearer "}
  - type: portcullis.io/request-header-modifier
    config: {set: [{name: x-egress-team, value: payments}], remove: [x-internal]}
---
apiVersion: v1
kind: Secret
metadata: {name: api-token, namespace: apps}
stringData: {token: %s}`, up.Port(), credentialValue)}
	d.apply(gatewayYAML+routeYAML+featureBackendYAML, s, resolved("creds.e2e.test", "127.0.0.1"))

	d.eventually(200, "creds.e2e.test", "/", "X-Internal", "leak-me")
	last := up.Requests()[len(up.Requests())-1]
	if got := last.Header.Get("Authorization"); got != "Bearer "+credentialValue {
		t.Errorf("upstream saw Authorization %q, want the injected credential", got)
	}
	if got := last.Header.Get("X-Egress-Team"); got != "payments" {
		t.Errorf("upstream saw x-egress-team %q, want payments", got)
	}
	if got := last.Header.Get("X-Internal"); got != "" {
		t.Errorf("upstream saw x-internal %q; the extension should remove it", got)
	}
	dump := string(d.envoy.ConfigDump())
	if !strings.Contains(dump, "backend/apps/api/http") || !strings.Contains(dump, "credential/apps/api") {
		t.Fatal("the config dump lacks the Backend's cluster or secret; the leak check below would prove nothing")
	}
	if strings.Contains(dump, credentialValue) {
		t.Fatal("Envoy's /config_dump?include_eds contains the credential's value")
	}
}

func TestHTTP2ToTheUpstream(t *testing.T) {
	ca := testpki.NewCA(t, "e2e upstream CA")
	server := ca.Issue(t, testpki.Options{CommonName: "h2", DNSNames: []string{"h2.e2e.test"}})
	tlsUp := testupstream.Start(t, testupstream.Options{Certificate: &server.TLS, HTTP2: true, Name: "h2"})
	plainUp := testupstream.Start(t, testupstream.Options{Name: "h2c"})
	tests := []struct {
		name, host string
		up         *testupstream.Server
		extra      string
		wantTLS    bool
	}{
		{name: "h2 negotiated by ALPN over TLS", host: "h2.e2e.test", up: tlsUp, wantTLS: true, extra: `  destination:
    type: FQDN
    fqdn:
      hostname: h2.e2e.test
      protocol: {type: HTTP2}
      tls: {caCertificates: [{secretRef: {name: upstream-ca, kind: ConfigMap}}]}
    ports: [{name: https, port: %d, protocol: HTTPS}]`},
		{name: "h2c with prior knowledge in plaintext", host: "h2c.e2e.test", up: plainUp, extra: `  destination:
    type: FQDN
    fqdn:
      hostname: h2c.e2e.test
      protocol: {type: HTTP2}
    ports: [{name: http, port: %d, protocol: HTTP}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := startDataPath(t)
			s := scenario{Port: d.port, Name: "h2", Host: tt.host, CA: ca.CertPEM, Extra: fmt.Sprintf(tt.extra, tt.up.Port())}
			d.apply(gatewayYAML+routeYAML+featureBackendYAML+caConfigMapYAML, s, resolved(tt.host, "127.0.0.1"))
			d.eventually(200, tt.host, "/")
			last := tt.up.Requests()[len(tt.up.Requests())-1]
			if last.Proto != "HTTP/2.0" || last.TLS != tt.wantTLS {
				t.Fatalf("upstream saw %s (TLS %v), want HTTP/2.0 (TLS %v)", last.Proto, last.TLS, tt.wantTLS)
			}
		})
	}
}

func TestWebSocketUpgradeCrossesTheGateway(t *testing.T) {
	up := testupstream.Start(t, testupstream.Options{Name: "ws"})
	d := startDataPath(t)
	s := scenario{Port: d.port, Name: "ws", Host: "ws.e2e.test", Extra: fmt.Sprintf(`  destination:
    type: FQDN
    fqdn: {hostname: ws.e2e.test, protocol: {type: WebSocket}}
    ports: [{name: http, port: %d, protocol: HTTP}]`, up.Port())}
	d.apply(gatewayYAML+routeYAML+featureBackendYAML, s, resolved("ws.e2e.test", "127.0.0.1"))
	d.eventually(200, "ws.e2e.test", "/")

	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(conn, "GET /socket HTTP/1.1\r\nHost: ws.e2e.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	reply := readUntil(t, conn, "\r\n\r\n")
	if !strings.HasPrefix(reply, "HTTP/1.1 101") {
		t.Fatalf("handshake reply = %q, want 101 Switching Protocols", reply)
	}
	_, _ = io.WriteString(conn, "ping-through-envoy")
	if echoed := readUntil(t, conn, "ping-through-envoy"); !strings.Contains(echoed, "ping-through-envoy") {
		t.Fatalf("echo = %q", echoed)
	}
}

func readUntil(t *testing.T, conn net.Conn, marker string) string {
	t.Helper()
	var got []byte
	buf := make([]byte, 512)
	for !strings.Contains(string(got), marker) {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("read %q so far: %v", got, err)
		}
	}
	return string(got)
}

func TestCircuitBreakerEjectsAFailingEndpoint(t *testing.T) {
	port := freePortOn(t, "127.0.0.1", "127.0.0.2")
	healthy := testupstream.Start(t, testupstream.Options{Name: "healthy", Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	failing := testupstream.Start(t, testupstream.Options{Name: "failing", Addr: fmt.Sprintf("127.0.0.2:%d", port)})
	failing.Respond(http.StatusServiceUnavailable)
	d := startDataPath(t)
	s := scenario{Port: d.port, Name: "flaky", Host: "flaky.e2e.test", Extra: fmt.Sprintf(`  destination:
    type: FQDN
    fqdn: {hostname: flaky.e2e.test}
    ports: [{name: http, port: %d, protocol: HTTP}]
  extensions:
  - type: portcullis.io/circuit-breaker
    config: {failureThreshold: 2, interval: 1s, baseEjectionTime: 60s, maxEjectionPercent: 50}`, port)}
	d.apply(gatewayYAML+routeYAML+featureBackendYAML, s, resolved("flaky.e2e.test", "127.0.0.1", "flaky.e2e.test", "127.0.0.2"))

	for i := 0; i < 20; i++ {
		d.get("flaky.e2e.test", "/")
	}
	before := len(failing.Requests())
	for i := 0; i < 20; i++ {
		if code, body, _ := d.get("flaky.e2e.test", "/"); code != 200 {
			t.Fatalf("request %d after ejection: %d %q; the failing endpoint should be ejected", i, code, body)
		}
	}
	if n := len(failing.Requests()) - before; n != 0 {
		t.Fatalf("the ejected endpoint still received %d requests", n)
	}
	if len(healthy.Requests()) < 20 {
		t.Fatalf("the healthy endpoint saw %d requests, want at least 20", len(healthy.Requests()))
	}
}

func TestConnectionPoolLimitIsObserved(t *testing.T) {
	up := testupstream.Start(t, testupstream.Options{Name: "pool"})
	up.Delay(300 * time.Millisecond)
	d := startDataPath(t)
	s := scenario{Port: d.port, Name: "pool", Host: "pool.e2e.test", Extra: fmt.Sprintf(`  destination:
    type: FQDN
    fqdn: {hostname: pool.e2e.test}
    ports: [{name: http, port: %d, protocol: HTTP}]
  extensions:
  - type: portcullis.io/connection-pool
    config: {maxConnections: 1, maxPendingRequests: 2}`, up.Port())}
	d.apply(gatewayYAML+routeYAML+featureBackendYAML, s, resolved("pool.e2e.test", "127.0.0.1"))
	d.eventually(200, "pool.e2e.test", "/")

	codes := make(chan int, 8)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := d.get("pool.e2e.test", "/")
			codes <- code
		}()
	}
	wg.Wait()
	close(codes)
	overflow := 0
	for c := range codes {
		if c == http.StatusServiceUnavailable {
			overflow++
		}
	}
	if up.MaxOpenConnections() > 1 {
		t.Errorf("the upstream saw %d connections at once; maxConnections is 1", up.MaxOpenConnections())
	}
	if overflow == 0 {
		t.Errorf("8 concurrent requests with 1 connection and 2 pending slots: want some 503 overflows, got none")
	}
}

// freePortOn finds a port free on every given loopback address.
func freePortOn(t *testing.T, hosts ...string) uint32 {
	t.Helper()
	for attempt := 0; attempt < 50; attempt++ {
		first, err := net.Listen("tcp", hosts[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		port := first.Addr().(*net.TCPAddr).Port
		ok := true
		for _, h := range hosts[1:] {
			l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", h, port))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		first.Close()
		if ok {
			return uint32(port)
		}
	}
	t.Fatal("no port free on every address")
	return 0
}
