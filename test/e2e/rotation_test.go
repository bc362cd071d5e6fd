package e2e

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/internal/testpki"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// TestClientCertificateRotationWithoutRestartOrFailures replaces the client certificate
// Secret's content while requests flow: new connections present the new certificate, the
// Envoy process is the same, and no request fails during the swap.
func TestClientCertificateRotationWithoutRestartOrFailures(t *testing.T) {
	ca := testpki.NewCA(t, "e2e upstream CA")
	server := ca.Issue(t, testpki.Options{CommonName: "api", DNSNames: []string{"rotate.e2e.test"}})
	first := ca.Issue(t, testpki.Options{CommonName: "client-v1", Client: true})
	second := ca.Issue(t, testpki.Options{CommonName: "client-v2", Client: true})
	// Connection: close makes every request a new connection and a new handshake.
	up := testupstream.Start(t, testupstream.Options{Certificate: &server.TLS, ClientCAs: ca.Pool(), CloseConnections: true, Name: "rotate"})
	d := startDataPath(t)
	yaml := gatewayYAML + routeYAML + fqdnBackendYAML + caConfigMapYAML + clientSecretYAML
	s := scenario{Port: d.port, UpPort: up.Port(), Name: "api", Host: "rotate.e2e.test", CA: ca.CertPEM,
		ClientCert: first.CertPEM, ClientKey: first.KeyPEM, Extra: "\n        clientCertificate: {secretRef: {name: client-cert}}"}
	d.apply(yaml, s, resolved("rotate.e2e.test", "127.0.0.1"))
	d.eventually(200, "rotate.e2e.test", "/")
	pid := d.envoy.PID()

	var failures atomic.Int32
	var sent atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if code, body, _ := d.get("rotate.e2e.test", "/"); code != 200 {
				failures.Add(1)
				t.Logf("request failed during rotation: %d %q", code, body)
			}
			sent.Add(1)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	s.ClientCert, s.ClientKey = second.CertPEM, second.KeyPEM
	d.apply(yaml, s, resolved("rotate.e2e.test", "127.0.0.1"))
	deadline := time.Now().Add(10 * time.Second)
	for lastClient(up) != "client-v2" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()

	if got := lastClient(up); got != "client-v2" {
		t.Fatalf("after rotation the upstream still sees %q, want client-v2", got)
	}
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d requests failed during the rotation", n, sent.Load())
	}
	if d.envoy.PID() != pid {
		t.Fatal("Envoy was restarted")
	}
	t.Logf("%d requests during the rotation, none failed", sent.Load())
}

func lastClient(up *testupstream.Server) string {
	seen := up.Requests()
	if len(seen) == 0 {
		return ""
	}
	return seen[len(seen)-1].ClientCN
}
