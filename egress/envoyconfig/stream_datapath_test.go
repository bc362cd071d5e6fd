package envoyconfig

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// helloUpstream is a TLS server for api.example.com that answers each connection with
// what the client's own ClientHello asked for (SNI and ALPN offers) and closes it.
func helloUpstream(t *testing.T) *countingListener {
	t.Helper()
	l := listenCounting(t, apiAddr)
	cert := sharedCA(t).tlsCertificate(t, "api.example.com")
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var hello *tls.ClientHelloInfo
				conn := tls.Server(c, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
					hello = h
					return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: h.SupportedProtos}, nil
				}})
				if conn.Handshake() != nil {
					return
				}
				fmt.Fprintf(conn, "sni=%s alpn=%s\n", hello.ServerName, strings.Join(hello.SupportedProtos, ","))
			}()
		}
	}()
	return l
}

// streamResources is an isolated Gateway with a TLS passthrough listener and a TCP
// listener: team-a's TLSRoute takes api.example.com to its Backend's TLS port, team-b's
// TCPRoute takes the TCP listener to its IP Backend.
func streamResources(tlsPort, tcpPort uint32, api, db *countingListener) *egress.Resources {
	all := gwapiv1.NamespacesFromAll
	passthrough := gwapiv1.TLSModePassthrough
	listener := func(name string, port uint32, p gwapiv1.ProtocolType) gwapiv1.Listener {
		l := gwapiv1.Listener{Name: gwapiv1.SectionName(name), Port: gwapiv1.PortNumber(port), Protocol: p,
			AllowedRoutes: &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &all}}}
		if p == gwapiv1.TLSProtocolType {
			l.TLS = &gwapiv1.ListenerTLSConfig{Mode: &passthrough}
		}
		return l
	}
	backendRef := func(name string) []gwapiv1.BackendRef {
		return []gwapiv1.BackendRef{{BackendObjectReference: gwapiv1.BackendObjectReference{
			Group: ptrTo(gwapiv1.Group(egressv1alpha1.GroupVersion.Group)), Kind: ptrTo(gwapiv1.Kind(egressv1alpha1.BackendKind)), Name: gwapiv1.ObjectName(name),
		}}}
	}
	parents := []gwapiv1.ParentReference{{Name: "egress", Namespace: ptrTo(gwapiv1.Namespace("gw"))}}
	pod := func(ns, name, ip string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: ip}}}}
	}
	return &egress.Resources{
		GatewayClasses: []gwapiv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"}, Spec: gwapiv1.GatewayClassSpec{ControllerName: egress.ControllerName}}},
		Gateways: []gwapiv1.Gateway{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "egress"},
			Spec: gwapiv1.GatewaySpec{GatewayClassName: "portcullis", Listeners: []gwapiv1.Listener{
				listener("tls", tlsPort, gwapiv1.TLSProtocolType), listener("tcp", tcpPort, gwapiv1.TCPProtocolType)}},
		}},
		TLSRoutes: []gwapiv1.TLSRoute{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "api"},
			Spec: gwapiv1.TLSRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: parents},
				Hostnames: []gwapiv1.Hostname{"api.example.com"}, Rules: []gwapiv1.TLSRouteRule{{BackendRefs: backendRef("api")}}},
		}, {
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "via-xbackend"},
			Spec: gwapiv1.TLSRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: parents},
				Hostnames: []gwapiv1.Hostname{"x.example.com"}, Rules: []gwapiv1.TLSRouteRule{{BackendRefs: []gwapiv1.BackendRef{{BackendObjectReference: gwapiv1.BackendObjectReference{
					Group: ptrTo(gwapiv1.Group(gwapixv1alpha1.GroupVersion.Group)), Kind: ptrTo(gwapiv1.Kind("XBackend")), Name: "api"}}}}}},
		}},
		XBackends: []gwapixv1alpha1.XBackend{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "api"},
			Spec: gwapixv1alpha1.BackendSpec{Type: gwapixv1alpha1.BackendTypeExternalHostname,
				ExternalHostname: &gwapixv1alpha1.ExternalHostnameBackend{Hostname: "api.example.com"},
				Port:             gwapixv1alpha1.BackendPort{Port: gwapixv1alpha1.PortNumber(portOf(api))}},
		}},
		TCPRoutes: []gwapiv1.TCPRoute{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db"},
			Spec:       gwapiv1.TCPRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: parents}, Rules: []gwapiv1.TCPRouteRule{{BackendRefs: backendRef("db")}}},
		}},
		Backends: []*egressv1alpha1.Backend{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "api"}, Spec: egressv1alpha1.BackendSpec{Destination: egressv1alpha1.BackendDestination{
				Type: egressv1alpha1.DestinationTypeFQDN, FQDN: &egressv1alpha1.FQDNDestination{Hostname: "api.example.com"},
				Ports: []egressv1alpha1.BackendPort{{Name: "tls", Port: int32(portOf(api)), Protocol: egressv1alpha1.PortProtocolTLS}}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db"}, Spec: egressv1alpha1.BackendSpec{Destination: egressv1alpha1.BackendDestination{
				Type: egressv1alpha1.DestinationTypeIP, IP: &egressv1alpha1.IPDestination{Address: dbAddr},
				Ports: []egressv1alpha1.BackendPort{{Name: "pg", Port: int32(portOf(db)), Protocol: egressv1alpha1.PortProtocolTCP}}}}},
		},
		Pods: []corev1.Pod{pod("team-a", "a", proxyCallerA), pod("team-b", "b", proxyCallerB)},
	}
}

// TestStreamRoutesDataPath proves TLSRoute passthrough and TCPRoute with a real Envoy,
// from the Gateway API objects through the translator: the TLS upstream sees the
// client's own ClientHello (its SNI and ALPN offers) and the client verifies the
// upstream's certificate itself; a TCP echo carries bytes both ways; a caller of
// another namespace, an unknown address and a server name no route takes are closed
// before any byte reaches an upstream, each with its decision in the audit log.
func TestStreamRoutesDataPath(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	api, db := helloUpstream(t), echoUpstream(t, dbAddr)
	tlsPort, tcpPort := freePort(t), freePort(t)
	addrs := egress.Addresses{"api.example.com": {State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr(apiAddr)}}}}
	res := translate.Translate(streamResources(tlsPort, tcpPort, api, db), addrs, translate.Options{AddressPolicy: allowAll{}})
	if len(res.Gateways) != 1 {
		t.Fatalf("translated %d Gateways, want 1; statuses: %+v", len(res.Gateways), res.Statuses.Gateways)
	}
	audit := runEnvoyAudit(t, envoy, staticBootstrapFile(t, res.Gateways[0], Options{}))
	waitEcho(t, proxyCallerB, tcpPort)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(sharedCA(t).certPEM)

	t.Run("TLS passthrough: the upstream sees the client's own SNI and ALPN, the client verifies the upstream", func(t *testing.T) {
		got, err := passthroughHello(roots, proxyCallerA, tlsPort, "api.example.com", []string{"h2", "x-portcullis"})
		if err != nil || got != "sni=api.example.com alpn=h2,x-portcullis\n" {
			t.Fatalf("got %q, %v; want the upstream's echo of the client's ClientHello", got, err)
		}
	})
	t.Run("TLS passthrough to an XBackend's vetted addresses", func(t *testing.T) {
		got, err := passthroughHello(roots, proxyCallerA, tlsPort, "x.example.com", nil)
		if err != nil || got != "sni=x.example.com alpn=\n" {
			t.Fatalf("got %q, %v; want the upstream's echo of the client's ClientHello", got, err)
		}
	})
	t.Run("SNI is matched regardless of case", func(t *testing.T) {
		if got, err := passthroughHello(roots, proxyCallerA, tlsPort, "API.Example.com", nil); err != nil || !strings.HasPrefix(got, "sni=") {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("TCP route: bytes both ways", func(t *testing.T) {
		if got := echoOnce(proxyCallerB, tcpPort, "ping\n"); got != "ping\n" {
			t.Fatalf("echo: %q", got)
		}
	})

	apiBefore, dbBefore := api.accepted.Load(), db.accepted.Load()
	refusedTLS := []struct{ name, from, sni, decision string }{
		{"a caller of a namespace with no route", proxyCallerB, "api.example.com", DecisionNoRouteForCaller},
		{"an address no pod holds", proxyCallerUnknown, "api.example.com", DecisionUnknownCaller},
		{"a server name no route of the caller takes", proxyCallerA, "other.example.com", DecisionNoRouteForCaller},
		{"a ClientHello without SNI", proxyCallerA, "", DecisionNoRouteForCaller},
	}
	for _, tc := range refusedTLS {
		t.Run("TLS refused: "+tc.name, func(t *testing.T) {
			if got, err := passthroughHello(roots, tc.from, tlsPort, tc.sni, nil); err == nil {
				t.Fatalf("handshake succeeded (%q); want the connection closed", got)
			}
		})
	}
	t.Run("TCP refused: a caller of a namespace with no route", func(t *testing.T) {
		if got := echoOnce(proxyCallerA, tcpPort, "ping\n"); got != "" {
			t.Fatalf("got %q through a refused connection", got)
		}
	})
	if n := api.accepted.Load() - apiBefore; n != 0 {
		t.Errorf("the TLS upstream accepted %d refused connections, want 0", n)
	}
	if n := db.accepted.Load() - dbBefore; n != 0 {
		t.Errorf("the TCP upstream accepted %d refused connections, want 0", n)
	}

	lines := audit.waitFor(t, 2+3+len(refusedTLS)+1) // waitEcho and the echo, three handshakes, the refused
	allowed := audit.find(t, lines, proxyCallerA, DecisionAllowed, "tlsroute/team-a/api", "")
	for path, want := range map[string]string{"backend": "team-a/api", "caller.namespace": "team-a", "sni": "api.example.com", "listener": "tls-" + strconv.Itoa(int(tlsPort))} {
		if got := field(allowed, path); got != want {
			t.Errorf("passthrough audit line: %s = %q, want %q\n%v", path, got, want, allowed)
		}
	}
	if got := field(allowed, "upstream"); !strings.HasPrefix(got, apiAddr+":") {
		t.Errorf("passthrough audit line: upstream = %q, want the vetted address %s", got, apiAddr)
	}
	for _, tc := range refusedTLS {
		if l := audit.find(t, lines, tc.from, tc.decision, "", ""); field(l, "upstream") != "" {
			t.Errorf("refused connection (%s) has upstream %q in its audit line", tc.name, field(l, "upstream"))
		}
	}
	audit.find(t, lines, proxyCallerA, DecisionNoRouteForCaller, "", "")
}

// passthroughHello opens TLS through the gateway from a loopback source address,
// verifying the upstream against the test CA as api.example.com, and returns its line.
func passthroughHello(roots *x509.CertPool, from string, port uint32, sni string, alpn []string) (string, error) {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", "127.0.0.1:"+strconv.Itoa(int(port)), &tls.Config{
		ServerName: sni, NextProtos: alpn, RootCAs: roots,
		VerifyConnection: func(cs tls.ConnectionState) error { // the certificate is api.example.com's whatever SNI was sent
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: "api.example.com"})
			return err
		},
		InsecureSkipVerify: true, // replaced by VerifyConnection, which checks the chain and the name
	})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(conn)
	return string(b), err
}

// echoOnce sends line over TCP through the gateway and returns what came back before
// the connection ended or a second passed.
func echoOnce(from string, port uint32, line string) string {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conn, err := dialer.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(port)))
	if err != nil {
		return "dial: " + err.Error()
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(conn, line)
	buf := make([]byte, len(line))
	n, _ := io.ReadFull(conn, buf)
	return string(buf[:n])
}

// waitEcho waits until the TCP listener carries an echo (Envoy is up).
func waitEcho(t *testing.T, from string, port uint32) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if echoOnce(from, port, "ready\n") == "ready\n" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the TCP listener carried no echo within 15s")
}
