package infra

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/portcullis-io/portcullis/controllers/xdscerts"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// TestHostProviderMutualTLS runs host Envoys against an xDS server that requires the
// client certificates the provider hands out (xdscerts.NewFiles): each real Envoy gets
// its configuration, while a local process without a certificate, or with another
// namespace's, gets nothing.
func TestHostProviderMutualTLS(t *testing.T) {
	ctx := context.Background()
	pki := filepath.Join(t.TempDir(), "xds-pki")
	certs, server, xdsPort, h := startMutualTLSHost(t, pki, 0)
	a, b := hostGateway("team-a"), hostGateway("team-b")
	for _, gw := range []Gateway{a, b} {
		if _, _, err := server.Publish(gw.key(), envoyconfig.Resources{}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Ensure(ctx, gw); err != nil {
			t.Fatal(err)
		}
	}
	for _, gw := range []Gateway{a, b} {
		waitConnected(t, h, server, gw)
	}
	filesA, err := certs.ClientFiles(a.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", xdsPort)
	tests := []struct {
		name     string
		cert     bool
		gateway  string
		wantCode codes.Code
	}{
		{"team-a's certificate fetches team-a's Gateway", true, a.key(), codes.OK},
		{"team-a's certificate is refused team-b's Gateway", true, b.key(), codes.PermissionDenied},
		{"a client without a certificate is refused in the handshake", false, a.key(), codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := xdstest.FetchClusters(t, addr, clientConfig(t, filesA, tt.cert), tt.gateway)
			if got := status.Code(err); got != tt.wantCode {
				t.Fatalf("status = %v (%v), want %v", got, err, tt.wantCode)
			}
			if tt.wantCode == codes.PermissionDenied && !strings.Contains(err.Error(), `"team-a"`) {
				t.Fatalf("the refusal does not name the certificate's namespace: %v", err)
			}
		})
	}
	t.Run("every key file is readable by its owner only", func(t *testing.T) {
		checked := 0
		err := filepath.WalkDir(pki, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v, want 0600", path, info.Mode().Perm())
			}
			checked++
			return nil
		})
		if err != nil || checked < 9 { // ca, server, two namespaces: three files each
			t.Fatalf("walked %d files: %v", checked, err)
		}
	})
}

// startMutualTLSHost keeps xDS certificates in files under pki (client certificates of
// leafLifetime, the default when 0), serves xDS requiring them, and starts a host
// provider handing them to its Envoys; both stop when the test ends.
func startMutualTLSHost(t *testing.T, pki string, leafLifetime time.Duration) (*xdscerts.Manager, *xds.Server, uint32, *Host) {
	t.Helper()
	certs, err := xdscerts.NewFiles(pki, xdscerts.Options{Log: testr.New(t), LeafLifetime: leafLifetime})
	if err != nil {
		t.Fatal(err)
	}
	if err := certs.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	server := xds.New(testr.New(t))
	xdsPort := serveXDS(t, server, certs)
	h, err := NewHost(HostOptions{EnvoyBinary: testenv.EnvoyBinary(t), XDSPort: xdsPort, WorkDir: t.TempDir(), ClientCerts: certs,
		Log: testr.New(t), LogLevel: "warn", Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return certs, server, xdsPort, h
}

// clientConfig is a TLS client trusting the xDS CA, with the namespace's client
// certificate when withCert.
func clientConfig(t *testing.T, files xdscerts.ClientFiles, withCert bool) *tls.Config {
	t.Helper()
	ca, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{ServerName: xdscerts.HostServerName, MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
	cfg.RootCAs.AppendCertsFromPEM(ca)
	if withCert {
		pair, err := tls.LoadX509KeyPair(files.Cert, files.Key)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// TestHostEnvoyRestartsOnARenewedCertificate: Envoy reads its xDS client certificate
// once, so when the namespace's certificate is renewed, the next Ensure restarts the
// Envoy, which connects again presenting the new one; an Ensure with nothing renewed
// leaves it running.
func TestHostEnvoyRestartsOnARenewedCertificate(t *testing.T) {
	ctx := context.Background()
	const lifetime = 6 * time.Second // renewed once 2/3 of it, 4 s, is over
	certs, server, _, h := startMutualTLSHost(t, filepath.Join(t.TempDir(), "xds-pki"), lifetime)
	gw := hostGateway("team-a")
	if _, _, err := server.Publish(gw.key(), envoyconfig.Resources{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Ensure(ctx, gw); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, h, server, gw)
	first := h.PID(gw.Namespace, gw.Name)
	if _, err := h.Ensure(ctx, gw); err != nil || h.PID(gw.Namespace, gw.Name) != first {
		t.Fatalf("an Ensure with nothing renewed changed the Envoy (pid %d -> %d, %v)", first, h.PID(gw.Namespace, gw.Name), err)
	}
	files, err := certs.ClientFiles(gw.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(files.Cert)
	if err != nil {
		t.Fatal(err)
	}

	time.Sleep(lifetime*2/3 + 500*time.Millisecond)
	if err := certs.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(files.Cert); string(after) == string(before) {
		t.Fatal("Refresh did not renew the client certificate")
	}
	if _, err := h.Ensure(ctx, gw); err != nil {
		t.Fatal(err)
	}
	if pid := h.PID(gw.Namespace, gw.Name); pid == first {
		t.Fatalf("the Envoy still runs as pid %d with the old certificate", pid)
	}
	waitGone(t, first)
	waitConnected(t, h, server, gw)
}
