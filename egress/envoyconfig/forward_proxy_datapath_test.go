package envoyconfig

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// Loopback addresses of the forward-proxy data-path test: callers by source address,
// and the addresses the upstreams listen on.
const (
	proxyCallerA       = "127.0.0.31" // team-a/a
	proxyCallerB       = "127.0.0.32" // team-b/b
	proxyCallerUnknown = "127.0.0.34" // no pod
	apiAddr            = "127.0.0.41" // api.example.com, as the DNS guard vetted it
	dbAddr             = "127.0.0.42" // team-b's IP Backend
	rebindAddr         = "127.0.0.43" // what the DNS guard refused for rebind.example.net
)

// countingListener counts the connections its server accepts, so that a test can prove
// a refused CONNECT never reached it.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

func listenCounting(t *testing.T, addr string) *countingListener {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &countingListener{Listener: l}
}

func portOf(l net.Listener) uint32 { return uint32(l.Addr().(*net.TCPAddr).Port) }

// tlsUpstream serves HTTPS as api.example.com (a test CA's certificate) and answers
// with its name and the SNI it was asked for.
func tlsUpstream(t *testing.T, name string) *countingListener {
	t.Helper()
	l := listenCounting(t, apiAddr)
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s tls=%t sni=%s\n", name, r.TLS != nil, r.TLS.ServerName)
	}))
	s.Listener = l
	s.TLS = &tls.Config{Certificates: []tls.Certificate{sharedCA(t).tlsCertificate(t, "api.example.com")}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return l
}

// echoUpstream sends back every byte it receives (a TCP destination).
func echoUpstream(t *testing.T, addr string) *countingListener {
	t.Helper()
	l := listenCounting(t, addr)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go echoLines(c)
		}
	}()
	return l
}

// echoLines echoes each line it reads and closes the connection after echoing "bye".
func echoLines(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := io.WriteString(c, line); err != nil || line == "bye\n" {
			return
		}
	}
}

// proxyUpstreams are the destinations of the test and the listeners nothing may reach.
type proxyUpstreams struct {
	tunnel, origin, otherPort, db, rebind *countingListener
}

// allowAll is an address policy that admits the test's loopback IP destination.
type allowAll struct{}

func (allowAll) CheckAddr(netip.Addr) (bool, string) { return true, "" }

// forwardProxyResources is a Gateway whose listener "proxy" is a forward proxy, with
// team-a's Backend api.example.com (a TLS port for tunnels, an HTTPS port its HTTPRoute
// uses), team-a's Backend for a name the DNS guard refused, and team-b's IP Backend with
// a TCP port that team-b admits team-a to.
func forwardProxyResources(proxyPort uint32, u proxyUpstreams, caPEM []byte) *egress.Resources {
	backend := func(ns, name string, d egressv1alpha1.BackendDestination) *egressv1alpha1.Backend {
		return &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: egressv1alpha1.BackendSpec{Destination: d}}
	}
	port := func(name string, l *countingListener, p egressv1alpha1.PortProtocol) egressv1alpha1.BackendPort {
		return egressv1alpha1.BackendPort{Name: name, Port: int32(portOf(l)), Protocol: p}
	}
	pod := func(ns, name, ip string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: ip}}}}
	}
	all := gwapiv1.NamespacesFromAll
	originPort := gwapiv1.PortNumber(portOf(u.origin))
	return &egress.Resources{
		GatewayClasses: []gwapiv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"}, Spec: gwapiv1.GatewayClassSpec{ControllerName: egress.ControllerName}}},
		Gateways: []gwapiv1.Gateway{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "egress", Annotations: map[string]string{translate.ForwardProxyAnnotation: "proxy"}},
			Spec: gwapiv1.GatewaySpec{GatewayClassName: "portcullis", Listeners: []gwapiv1.Listener{{
				Name: "proxy", Port: gwapiv1.PortNumber(proxyPort), Protocol: gwapiv1.HTTPProtocolType,
				AllowedRoutes: &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &all}},
			}}},
		}},
		HTTPRoutes: []*gwapiv1.HTTPRoute{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "api"},
			Spec: gwapiv1.HTTPRouteSpec{
				CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "egress", Namespace: ptrTo(gwapiv1.Namespace("gw"))}}},
				Hostnames:       []gwapiv1.Hostname{"api.example.com"},
				Rules: []gwapiv1.HTTPRouteRule{{BackendRefs: []gwapiv1.HTTPBackendRef{{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{
					Group: ptrTo(gwapiv1.Group(egressv1alpha1.GroupVersion.Group)), Kind: ptrTo(gwapiv1.Kind(egressv1alpha1.BackendKind)), Name: "api", Port: &originPort,
				}}}}}},
			},
		}},
		Backends: []*egressv1alpha1.Backend{
			backend("team-a", "api", egressv1alpha1.BackendDestination{Type: egressv1alpha1.DestinationTypeFQDN,
				FQDN: &egressv1alpha1.FQDNDestination{Hostname: "api.example.com", TLS: &egressv1alpha1.BackendTLS{
					CACertificates: []egressv1alpha1.CertificateRef{{SecretRef: egressv1alpha1.ObjectKeyReference{Name: "ca"}}},
				}},
				Ports: []egressv1alpha1.BackendPort{port("tls", u.tunnel, egressv1alpha1.PortProtocolTLS), port("https", u.origin, egressv1alpha1.PortProtocolHTTPS)}}),
			backend("team-a", "rebind", egressv1alpha1.BackendDestination{Type: egressv1alpha1.DestinationTypeFQDN,
				FQDN:  &egressv1alpha1.FQDNDestination{Hostname: "rebind.example.net"},
				Ports: []egressv1alpha1.BackendPort{port("tls", u.rebind, egressv1alpha1.PortProtocolTLS)}}),
			backend("team-b", "db", egressv1alpha1.BackendDestination{Type: egressv1alpha1.DestinationTypeIP,
				IP: &egressv1alpha1.IPDestination{Address: dbAddr}, Ports: []egressv1alpha1.BackendPort{port("pg", u.db, egressv1alpha1.PortProtocolTCP)}}),
		},
		ReferenceGrants: []gwapiv1.ReferenceGrant{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "callers"},
			Spec: gwapiv1.ReferenceGrantSpec{
				From: []gwapiv1.ReferenceGrantFrom{{Group: "", Kind: "Pod", Namespace: "team-a"}},
				To:   []gwapiv1.ReferenceGrantTo{{Group: gwapiv1.Group(egressv1alpha1.GroupVersion.Group), Kind: gwapiv1.Kind(egressv1alpha1.BackendKind)}},
			},
		}},
		Secrets: []corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ca"}, Data: map[string][]byte{"ca.crt": caPEM}}},
		Pods:    []corev1.Pod{pod("team-a", "a", proxyCallerA), pod("team-b", "b", proxyCallerB)},
	}
}

// TestForwardProxyDataPath proves the forward proxy with a real Envoy and real clients,
// from the Gateway API objects through the translator: CONNECT reaches a TLS upstream
// (its certificate verified by the client) only where a Backend of the caller allows
// the host and port; everything else is 403 with the decision and reaches no upstream;
// absolute-form http:// requests get TLS origination as on any HTTP listener.
func TestForwardProxyDataPath(t *testing.T) {
	envoy, curl := testenv.EnvoyBinary(t), testenv.CurlBinary(t)
	u := proxyUpstreams{tunnel: tlsUpstream(t, "tunnel"), origin: tlsUpstream(t, "origin"),
		otherPort: listenCounting(t, apiAddr), db: echoUpstream(t, dbAddr), rebind: listenCounting(t, rebindAddr)}
	proxyPort := freePort(t)
	addrs := egress.Addresses{
		"api.example.com":    {State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr(apiAddr)}}},
		"rebind.example.net": {State: egress.ResolutionAllForbidden, Blocked: []egress.BlockedAddress{{IP: netip.MustParseAddr(rebindAddr), Reason: "test"}}},
	}
	res := translate.Translate(forwardProxyResources(proxyPort, u, sharedCA(t).certPEM), addrs, translate.Options{AddressPolicy: allowAll{}})
	if len(res.Gateways) != 1 {
		t.Fatalf("translated %d Gateways, want 1; statuses: %+v", len(res.Gateways), res.Statuses.Gateways)
	}
	audit := runEnvoyAudit(t, envoy, staticBootstrapFile(t, res.Gateways[0], Options{}))
	proxy := "http://127.0.0.1:" + strconv.Itoa(int(proxyPort))
	waitReady(t, proxy+"/")
	tunnelURL := fmt.Sprintf("https://api.example.com:%d/hello", portOf(u.tunnel.Listener))

	t.Run("a Go client with HTTPS_PROXY reaches its own Backend through CONNECT", func(t *testing.T) {
		status, body := proxiedGet(t, proxyCallerA, proxy, tunnelURL)
		if status != 200 || body != "tunnel tls=true sni=api.example.com\n" {
			t.Fatalf("got %d %q, want 200 from the upstream, TLS end to end", status, body)
		}
	})
	t.Run("curl with a proxy reaches its own Backend through CONNECT", func(t *testing.T) {
		caFile := writeFile(t, "ca.pem", sharedCA(t).certPEM)
		cmd := exec.Command(curl, "-sS", "--max-time", "10", "--noproxy", "", "--proxy", proxy, "--interface", proxyCallerA, "--cacert", caFile, tunnelURL)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != "tunnel tls=true sni=api.example.com\n" {
			t.Fatalf("curl: %v: %q", err, out)
		}
	})
	t.Run("a TCP tunnel to an IP Backend whose namespace admits the caller carries bytes both ways", func(t *testing.T) {
		conn := connectFrom(t, proxyCallerA, proxyPort, fmt.Sprintf("%s:%d", dbAddr, portOf(u.db.Listener)), 200, "")
		defer conn.Close()
		if _, err := conn.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		line, err := conn.r.ReadString('\n')
		if err != nil || line != "ping\n" {
			t.Fatalf("echo through the tunnel: %q, %v", line, err)
		}
	})
	t.Run("a tunnel its destination closes ends for the client at once, not after Envoy's default second", func(t *testing.T) {
		conn := connectFrom(t, proxyCallerA, proxyPort, fmt.Sprintf("%s:%d", dbAddr, portOf(u.db.Listener)), 200, "")
		defer conn.Close()
		if _, err := conn.Write([]byte("bye\n")); err != nil {
			t.Fatal(err)
		}
		if line, err := conn.r.ReadString('\n'); err != nil || line != "bye\n" {
			t.Fatalf("echo through the tunnel: %q, %v", line, err)
		}
		start := time.Now()
		if rest, err := io.ReadAll(conn.r); err != nil || len(rest) != 0 {
			t.Fatalf("after the destination closed: %q, %v; want end of file", rest, err)
		}
		if waited := time.Since(start); waited > 500*time.Millisecond {
			t.Errorf("end of file %v after the destination closed, want under 500 ms (the delayed close is %v)", waited, tunnelCloseDelay)
		}
	})
	t.Run("absolute-form http:// through HTTP_PROXY is routed and TLS is originated", func(t *testing.T) {
		status, body := proxiedGet(t, proxyCallerA, proxy, "http://api.example.com/plain")
		if status != 200 || body != "origin tls=true sni=api.example.com\n" {
			t.Fatalf("got %d %q, want 200 from the HTTPS upstream", status, body)
		}
	})

	before := u.tunnel.accepted.Load()
	refused := []struct {
		name, from, authority, body string
	}{
		{"a host no Backend declares", proxyCallerA, fmt.Sprintf("other.example.com:%d", portOf(u.tunnel.Listener)), DecisionNoTunnel},
		{"the Backend's host on a port it does not declare", proxyCallerA, fmt.Sprintf("api.example.com:%d", portOf(u.otherPort.Listener)), DecisionNoTunnel},
		{"the Backend's HTTPS port (routes only, not a TLS or TCP port)", proxyCallerA, fmt.Sprintf("api.example.com:%d", portOf(u.origin.Listener)), DecisionNoTunnel},
		{"a name whose every address the DNS guard refused", proxyCallerA, fmt.Sprintf("rebind.example.net:%d", portOf(u.rebind.Listener)), DecisionNoAddress},
		{"a caller of another namespace", proxyCallerB, fmt.Sprintf("api.example.com:%d", portOf(u.tunnel.Listener)), DecisionNoTunnel},
		{"an address no pod holds", proxyCallerUnknown, fmt.Sprintf("api.example.com:%d", portOf(u.tunnel.Listener)), DecisionUnknownCaller},
	}
	for _, tc := range refused {
		t.Run("CONNECT refused: "+tc.name, func(t *testing.T) {
			connectFrom(t, tc.from, proxyPort, tc.authority, 403, tc.body+"\n").Close()
		})
	}
	originBefore := u.origin.accepted.Load()
	for name, l := range map[string]*countingListener{"the undeclared port": u.otherPort, "the refused address": u.rebind} {
		if n := l.accepted.Load(); n != 0 {
			t.Errorf("%s accepted %d connections, want 0", name, n)
		}
	}
	if n := u.tunnel.accepted.Load() - before; n != 0 {
		t.Errorf("the TLS upstream accepted %d connections from refused CONNECTs, want 0", n)
	}
	if n := u.origin.accepted.Load() - originBefore; n != 0 {
		t.Errorf("the HTTPS upstream accepted %d connections from refused CONNECTs, want 0", n)
	}

	lines := audit.waitFor(t, 1+4+len(refused)) // waitReady, the four allowed, the refused
	tunnelLine := audit.find(t, lines, proxyCallerA, DecisionTunnel, "", "200")
	for path, want := range map[string]string{"backend": "team-a/api", "caller.namespace": "team-a", "caller.pod": "a", "listener": "http-" + strconv.Itoa(int(proxyPort))} {
		if got := field(tunnelLine, path); got != want {
			t.Errorf("tunnel audit line: %s = %q, want %q\n%v", path, got, want, tunnelLine)
		}
	}
	if got := field(tunnelLine, "upstream"); !strings.HasPrefix(got, apiAddr+":") {
		t.Errorf("tunnel audit line: upstream = %q, want the vetted address %s", got, apiAddr)
	}
	for _, tc := range refused {
		if l := audit.find(t, lines, tc.from, tc.body, "", "403"); field(l, "upstream") != "" {
			t.Errorf("refused CONNECT (%s) has upstream %q in its audit line", tc.name, field(l, "upstream"))
		}
	}
}

// proxiedGet sends a GET through the proxy from a loopback source address, trusting the
// test CA only.
func proxiedGet(t *testing.T, from, proxy, rawURL string) (int, string) {
	t.Helper()
	proxyURL, err := url.Parse(proxy)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(sharedCA(t).certPEM)
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(proxyURL), DialContext: dialer.DialContext, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
	resp, err := client.Get(rawURL)
	if err != nil {
		t.Fatalf("GET %s through %s from %s: %v", rawURL, proxy, from, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// tunnelConn is a connection after its CONNECT, reading through the buffer that read
// the proxy's answer.
type tunnelConn struct {
	net.Conn
	r *bufio.Reader
}

// connectFrom sends CONNECT authority from a source address and checks the answer's
// status and, for a refusal, its body.
func connectFrom(t *testing.T, from string, proxyPort uint32, authority string, wantStatus int, wantBody string) *tunnelConn {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialer.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(int(proxyPort)))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		t.Fatalf("CONNECT %s from %s: %v", authority, from, err)
	}
	body := ""
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
	}
	if resp.StatusCode != wantStatus || body != wantBody {
		c.Close()
		t.Fatalf("CONNECT %s from %s: %d %q, want %d %q", authority, from, resp.StatusCode, body, wantStatus, wantBody)
	}
	return &tunnelConn{Conn: c, r: r}
}

func ptrTo[T any](v T) *T { return &v }
