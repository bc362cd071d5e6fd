package xds

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// These tests run the real Envoy against the real server.

func startEnvoy(t *testing.T, xds *net.TCPAddr) *xdstest.Envoy {
	t.Helper()
	return xdstest.Start(t, xdstest.Config{
		Bootstrap: xdstest.LocalBootstrap(testGateway, "envoy-"+t.Name(), uint32(xds.Port)),
	})
}

func publish(t *testing.T, s *Server, res envoyconfig.Resources) string {
	t.Helper()
	v, changed, err := s.Publish(testGateway, res)
	if err != nil || !changed {
		t.Fatalf("publish: version %q changed %v err %v", v, changed, err)
	}
	return v
}

// waitVersion waits until the Gateway is Programmed with version.
func waitVersion(t *testing.T, s *Server, version string) {
	t.Helper()
	xdstest.WaitFor(t, xdstest.Timeout, "Envoy to run version "+version, func() error {
		st := s.Status(testGateway)
		if ok, reason, message := st.Programmed(); !ok || st.Version != version {
			return fmt.Errorf("version %s: %s: %s", st.Version, reason, message)
		}
		return nil
	})
}

// get does one request on a new connection.
func get(client *http.Client, url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d, body %q", resp.StatusCode, body)
	}
	return string(body), nil
}

func waitBody(t *testing.T, client *http.Client, url, want string) {
	t.Helper()
	xdstest.WaitFor(t, xdstest.Timeout, "GET "+url+" to answer "+want, func() error {
		body, err := get(client, url)
		if err != nil {
			return err
		}
		if body != want {
			return fmt.Errorf("body %q", body)
		}
		return nil
	})
}

var plainClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func TestEnvoyProgrammedRejectedRecovered(t *testing.T) {
	t.Parallel()
	s := New(testr.New(t))
	addr, _ := serve(t, s)
	port := xdstest.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)

	v1 := publish(t, s, helloResources(t, port, "hello"))
	envoy := startEnvoy(t, addr)
	waitVersion(t, s, v1)
	envoy.WaitReady()
	waitBody(t, plainClient, url, "hello")
	if dump := envoy.ConfigDump(); !bytes.Contains(dump, []byte(`"version_info": "`+v1+`"`)) {
		t.Fatalf("Envoy's config dump does not show version %s", v1)
	}

	// Valid for ValidateAll, refused by Envoy: the route keeps its last good version.
	bad := helloResources(t, port, "")
	bad.Routes = []*routev3.RouteConfiguration{badRegexRoute("http")}
	v2 := publish(t, s, bad)
	_, message := waitProgrammed(t, s, ReasonRejected)
	if !strings.Contains(message, "RouteConfiguration") || !strings.Contains(message, v2) || !strings.Contains(message, "missing )") {
		t.Fatalf("Rejected message %q names neither the route configuration, the version nor RE2's complaint", message)
	}
	t.Logf("Rejected: %s", message)
	if body, err := get(plainClient, url); err != nil || body != "hello" {
		t.Fatalf("after the rejection GET = %q, %v; want the last good %q", body, err, "hello")
	}
	time.Sleep(500 * time.Millisecond) // a resend loop would reject again meanwhile
	if n, err := envoy.Stat("http.http.rds.http.update_rejected"); err != nil || n != 1 {
		t.Fatalf("Envoy rejected the route configuration %d times (%v), want once", n, err)
	}

	v3 := publish(t, s, helloResources(t, port, "hello again"))
	waitVersion(t, s, v3)
	waitBody(t, plainClient, url, "hello again")
	if nack := s.Status(testGateway).Types[resource.RouteType].Nack; nack != nil {
		t.Fatalf("the rejection is still reported after a good version: %+v", nack)
	}
}

// httpsResources is one HTTPS listener whose certificate comes by SDS.
func httpsResources(t *testing.T, port uint32, cert xdstest.Cert) envoyconfig.Resources {
	return envoyconfig.Resources{
		Listeners: []*listenerv3.Listener{httpListener(t, "https", port, "https", "gateway-cert")},
		Routes:    []*routev3.RouteConfiguration{directRoute("https", "hello over TLS")},
		Secrets:   []*tlsv3.Secret{certSecret("gateway-cert", cert)},
	}
}

// servedCert is the leaf certificate Envoy presents on a new connection.
func servedCert(port uint32) ([]byte, error) {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", fmt.Sprintf("127.0.0.1:%d", port),
		&tls.Config{InsecureSkipVerify: true, ServerName: "egress.example"}) // the test compares the certificate itself
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw, nil
}

func waitServedCert(t *testing.T, port uint32, want xdstest.Cert) {
	t.Helper()
	xdstest.WaitFor(t, xdstest.Timeout, "Envoy to serve "+want.Leaf.Subject.CommonName, func() error {
		raw, err := servedCert(port)
		if err != nil {
			return err
		}
		if !bytes.Equal(raw, want.Leaf.Raw) {
			got, _ := x509.ParseCertificate(raw)
			return fmt.Errorf("Envoy serves %v", got.Subject)
		}
		return nil
	})
}

func TestEnvoySecretBySDSOverADS(t *testing.T) {
	t.Parallel()
	s := New(testr.New(t))
	addr, _ := serve(t, s)
	port := xdstest.FreePort(t)
	first := xdstest.SelfSignedCert(t, "first", "egress.example")

	v1 := publish(t, s, httpsResources(t, port, first))
	envoy := startEnvoy(t, addr)
	pid := envoy.PID()
	waitVersion(t, s, v1)
	waitServedCert(t, port, first)
	roots := x509.NewCertPool()
	roots.AddCert(first.Leaf)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "egress.example"}}}
	waitBody(t, client, fmt.Sprintf("https://127.0.0.1:%d/", port), "hello over TLS")

	second := xdstest.SelfSignedCert(t, "second", "egress.example")
	v2 := publish(t, s, httpsResources(t, port, second))
	waitVersion(t, s, v2)
	waitServedCert(t, port, second)

	for stat, want := range map[string]uint64{"listener_manager.listener_added": 1, "listener_manager.listener_modified": 0} {
		if n, err := envoy.Stat(stat); err != nil || n != want {
			t.Errorf("%s = %d (%v), want %d: the certificate must change without replacing the listener", stat, n, err, want)
		}
	}
	if envoy.PID() != pid {
		t.Errorf("Envoy was restarted (pid %d, then %d)", pid, envoy.PID())
	}

	// A second listener with a secret Envoy has not subscribed to yet: the cache holds
	// the secrets back until Envoy names both, which it does once it has the listener.
	port2 := xdstest.FreePort(t)
	other := xdstest.SelfSignedCert(t, "other", "egress.example")
	two := httpsResources(t, port, second)
	two.Listeners = append(two.Listeners, httpListener(t, "https-2", port2, "https", "other-cert"))
	two.Secrets = append(two.Secrets, certSecret("other-cert", other))
	v3 := publish(t, s, two)
	waitVersion(t, s, v3)
	waitServedCert(t, port2, other)
	waitServedCert(t, port, second)

	// No secret at all: Envoy drops its SDS subscriptions and the Gateway is programmed.
	plainPort := xdstest.FreePort(t)
	v4 := publish(t, s, helloResources(t, plainPort, "plain again"))
	waitVersion(t, s, v4)
	waitBody(t, plainClient, fmt.Sprintf("http://127.0.0.1:%d/", plainPort), "plain again")
}

func TestEnvoyOverMutualTLS(t *testing.T) {
	t.Parallel()
	const serverName = "portcullis-xds.portcullis-system.svc"
	serverCert := xdstest.SelfSignedCert(t, "xds-server", serverName)
	clientCert := xdstest.SelfSignedCert(t, "envoy-client")
	keyPair, err := tls.X509KeyPair(serverCert.CertPEM, serverCert.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(clientCert.Leaf)
	creds := credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{keyPair},
		ClientCAs:    clientCAs,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	})

	s := New(testr.New(t))
	addr, _ := serve(t, s, grpc.Creds(creds))
	dir := t.TempDir()
	files := map[string][]byte{"tls.crt": clientCert.CertPEM, "tls.key": clientCert.KeyPEM, "ca.crt": serverCert.CertPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := xdstest.FreePort(t)
	v := publish(t, s, helloResources(t, port, "hello over mTLS xDS"))
	xdstest.Start(t, xdstest.Config{Bootstrap: func(adminPort uint32) ([]byte, error) {
		return bootstrap.YAML(bootstrap.Options{
			Gateway: testGateway, NodeID: "envoy-mtls", XDSAddress: "127.0.0.1", XDSPort: uint32(addr.Port), AdminPort: adminPort,
			TLS: &bootstrap.XDSClientTLS{
				CertFile: filepath.Join(dir, "tls.crt"),
				KeyFile:  filepath.Join(dir, "tls.key"),
				CAFile:   filepath.Join(dir, "ca.crt"),
				SNI:      serverName,
			},
		})
	}})
	waitVersion(t, s, v)
	waitBody(t, plainClient, fmt.Sprintf("http://127.0.0.1:%d/", port), "hello over mTLS xDS")
}
