package testupstream

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/internal/testpki"
)

func TestRecordsSNIClientCertificateAndProtocol(t *testing.T) {
	ca := testpki.NewCA(t, "upstream CA")
	server := ca.Issue(t, testpki.Options{CommonName: "api", DNSNames: []string{"api.e2e.test"}})
	client := ca.Issue(t, testpki.Options{CommonName: "portcullis-client", Client: true})
	up := Start(t, Options{Certificate: &server.TLS, ClientCAs: ca.Pool(), HTTP2: true, Name: "api"})

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "api.e2e.test", Certificates: []tls.Certificate{client.TLS}}, ForceAttemptHTTP2: true}
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + up.Addr + "/x?y=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := up.Requests()
	if len(got) != 1 {
		t.Fatalf("saw %d requests, want 1", len(got))
	}
	if s := got[0]; !s.TLS || s.SNI != "api.e2e.test" || s.ClientCN != "portcullis-client" || s.Proto != "HTTP/2.0" || s.Path != "/x?y=1" {
		t.Fatalf("seen = %+v", s)
	}
}

func TestRefusesAClientWithoutCertificate(t *testing.T) {
	ca := testpki.NewCA(t, "upstream CA")
	server := ca.Issue(t, testpki.Options{CommonName: "api", DNSNames: []string{"api.e2e.test"}})
	up := Start(t, Options{Certificate: &server.TLS, ClientCAs: ca.Pool()})
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "api.e2e.test"}}
	if resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + up.Addr + "/"); err == nil {
		resp.Body.Close()
		t.Fatal("request without a client certificate succeeded")
	}
	if n := len(up.Requests()); n != 0 {
		t.Fatalf("upstream recorded %d requests without a client certificate", n)
	}
}

func TestServerNameRefusesAnotherSNI(t *testing.T) {
	ca := testpki.NewCA(t, "upstream CA")
	server := ca.Issue(t, testpki.Options{CommonName: "api", DNSNames: []string{"api.e2e.test", "other.e2e.test"}})
	up := Start(t, Options{Certificate: &server.TLS, ServerName: "api.e2e.test"})
	get := func(sni string) error {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: sni}}
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + up.Addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get("api.e2e.test"); err != nil {
		t.Fatalf("the expected SNI was refused: %v", err)
	}
	if err := get("other.e2e.test"); err == nil {
		t.Fatal("another SNI was served")
	}
	if n := len(up.Requests()); n != 1 {
		t.Fatalf("upstream recorded %d requests, want 1", n)
	}
}

func TestWebSocketUpgradeEchoes(t *testing.T) {
	up := Start(t, Options{Name: "ws"})
	conn, err := net.DialTimeout("tcp", up.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\nping")
	buf := make([]byte, 256)
	n, _ := io.ReadAtLeast(conn, buf, 20)
	reply := string(buf[:n])
	for !strings.Contains(reply, "ping") {
		m, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("reply %q: %v", reply, err)
		}
		reply += string(buf[:m])
	}
	if !strings.HasPrefix(reply, "HTTP/1.1 101") {
		t.Fatalf("reply = %q", reply)
	}
}
