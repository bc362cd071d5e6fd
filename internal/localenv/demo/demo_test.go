package demo

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestAPIRequiresTheDemoClientCertificate talks TLS to the real server: without a
// client certificate the handshake fails; with the demo's, the answer names it.
func TestAPIRequiresTheDemoClientCertificate(t *testing.T) {
	d, server, err := newCredentials()
	if err != nil {
		t.Fatal(err)
	}
	api, err := StartAPI("127.0.0.1:0", server, d.ca.Pool())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	tests := []struct {
		name     string
		certs    []tls.Certificate
		wantBody string
		wantErr  bool
	}{
		{name: "no client certificate is refused", wantErr: true},
		{name: "the demo client certificate gets the answer", certs: []tls.Certificate{d.client.TLS},
			wantBody: Answer("GET", "/hello", Hostname, ClientCommonName)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				Proxy:           nil,
				TLSClientConfig: &tls.Config{RootCAs: d.ca.Pool(), ServerName: Hostname, Certificates: tt.certs},
			}}
			resp, err := client.Get("https://" + api.Addr + "/hello")
			if tt.wantErr {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("status %s without a client certificate, want a failed handshake", resp.Status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if string(body) != tt.wantBody {
				t.Fatalf("body %q, want %q", body, tt.wantBody)
			}
		})
	}
}

func TestAnswerNamesWhatTheAPISaw(t *testing.T) {
	got := Answer("GET", "/hello", Hostname, ClientCommonName)
	want := "hello from api.demo.portcullis.test: GET /hello, TLS server name api.demo.portcullis.test, client certificate CN=portcullis-demo-gateway\n"
	if got != want {
		t.Fatalf("Answer = %q, want %q (the README shows this line)", got, want)
	}
}

// TestDNSAnswersTheDemoNameAndForwardsTheRest queries the real server over UDP and TCP.
func TestDNSAnswersTheDemoNameAndForwardsTheRest(t *testing.T) {
	upstream := startDNS(t, map[string]net.IP{"api.example.com": net.IPv4(203, 0, 113, 7)}, nil)
	forwarding := startDNS(t, map[string]net.IP{Hostname: net.IPv4(127, 0, 0, 1)}, []string{upstream.Addr})
	isolated := startDNS(t, map[string]net.IP{Hostname: net.IPv4(127, 0, 0, 1)}, nil)
	tests := []struct {
		name      string
		server    *DNS
		qname     string
		qtype     uint16
		wantRcode int
		wantA     string
	}{
		{name: "the demo name resolves to loopback", server: forwarding, qname: Hostname, qtype: dns.TypeA, wantRcode: dns.RcodeSuccess, wantA: "127.0.0.1"},
		{name: "names are case-insensitive", server: forwarding, qname: "API.Demo.Portcullis.TEST", qtype: dns.TypeA, wantRcode: dns.RcodeSuccess, wantA: "127.0.0.1"},
		{name: "the demo name has no IPv6 address", server: forwarding, qname: Hostname, qtype: dns.TypeAAAA, wantRcode: dns.RcodeSuccess},
		{name: "another name is forwarded upstream", server: forwarding, qname: "api.example.com", qtype: dns.TypeA, wantRcode: dns.RcodeSuccess, wantA: "203.0.113.7"},
		{name: "without upstream another name is refused", server: isolated, qname: "api.example.com", qtype: dns.TypeA, wantRcode: dns.RcodeRefused},
	}
	for _, tt := range tests {
		for _, network := range []string{"udp", "tcp"} {
			t.Run(tt.name+" over "+network, func(t *testing.T) {
				m := new(dns.Msg).SetQuestion(dns.Fqdn(tt.qname), tt.qtype)
				resp, _, err := (&dns.Client{Net: network, Timeout: 5 * time.Second}).Exchange(m, tt.server.Addr)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Rcode != tt.wantRcode {
					t.Fatalf("rcode %s, want %s", dns.RcodeToString[resp.Rcode], dns.RcodeToString[tt.wantRcode])
				}
				var got []string
				for _, rr := range resp.Answer {
					if a, ok := rr.(*dns.A); ok {
						got = append(got, a.A.String())
					}
				}
				if strings.Join(got, ",") != tt.wantA {
					t.Fatalf("A records %v, want %q", got, tt.wantA)
				}
			})
		}
	}
}

func startDNS(t *testing.T, names map[string]net.IP, upstream []string) *DNS {
	t.Helper()
	d, err := StartDNS(names, upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestObjectsMatchTheConstants: the samples name what the binary serves, the CA and
// client certificate come right after the namespace, and the Secret is a TLS pair.
func TestObjectsMatchTheConstants(t *testing.T) {
	d, _, err := newCredentials()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := d.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
		byKind[o.GetKind()] = o
	}
	if got := strings.Join(kinds, ","); got != "Namespace,ConfigMap,Secret,GatewayClass,Gateway,Backend,HTTPRoute" {
		t.Fatalf("objects in order %s", got)
	}
	checks := []struct {
		name string
		kind string
		path []string
		want any
	}{
		{"the namespace", "Namespace", []string{"metadata", "name"}, Namespace},
		{"the class is ours", "GatewayClass", []string{"spec", "controllerName"}, "portcullis.io/gateway-controller"},
		{"the Gateway name", "Gateway", []string{"metadata", "name"}, Gateway},
		{"the Backend hostname", "Backend", []string{"spec", "destination", "fqdn", "hostname"}, Hostname},
		{"the Backend CA ConfigMap", "Backend", []string{"spec", "destination", "fqdn", "tls", "caCertificates"}, nil},
		{"the Backend client certificate Secret", "Backend", []string{"spec", "destination", "fqdn", "tls", "clientCertificate", "secretRef", "name"}, ClientSecret},
		{"the Secret type", "Secret", []string{"type"}, "kubernetes.io/tls"},
		{"the ConfigMap name", "ConfigMap", []string{"metadata", "name"}, CAConfigMap},
	}
	for _, c := range checks {
		got, found, err := unstructured.NestedFieldNoCopy(byKind[c.kind].Object, c.path...)
		if err != nil || !found {
			t.Errorf("%s: %v not found (%v)", c.name, c.path, err)
			continue
		}
		if c.want != nil && got != c.want {
			t.Errorf("%s: %v = %v, want %v", c.name, c.path, got, c.want)
		}
	}
	ports, _, _ := unstructured.NestedSlice(byKind["Backend"].Object, "spec", "destination", "ports")
	if len(ports) != 1 || ports[0].(map[string]any)["port"] != int64(APIPort) {
		t.Errorf("Backend ports %v, want the demo API port %d", ports, APIPort)
	}
	listeners, _, _ := unstructured.NestedSlice(byKind["Gateway"].Object, "spec", "listeners")
	if len(listeners) != 1 || listeners[0].(map[string]any)["port"] != int64(GatewayPort) {
		t.Errorf("Gateway listeners %v, want one on port %d", listeners, GatewayPort)
	}
}
