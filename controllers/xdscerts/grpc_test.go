package xdscerts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testpki"
)

// xdsServer serves the real xDS server with the Manager's server options on a loopback
// port, with an (empty) snapshot for each of gateways, and returns its address.
func xdsServer(t *testing.T, m *Manager, gateways ...string) string {
	t.Helper()
	s := xds.New(testr.New(t))
	for _, gw := range gateways {
		if _, _, err := s.Publish(gw, envoyconfig.Resources{}); err != nil {
			t.Fatal(err)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, lis, m.ServerOptions()...) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return lis.Addr().String()
}

// clientTLS is what an Envoy mounting the Secret would use: its certificate and key, and
// ca.crt to verify the server under serverName.
func clientTLS(t *testing.T, s *corev1.Secret, serverName string, clock *fakeClock) *tls.Config {
	t.Helper()
	cfg := &tls.Config{ServerName: serverName, Time: clock.Now, MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
	if !cfg.RootCAs.AppendCertsFromPEM(s.Data[BundleKey]) {
		t.Fatalf("Secret %s/%s has no ca.crt", s.Namespace, s.Name)
	}
	if s.Data[KeyKey] != nil {
		pair, err := tls.X509KeyPair(s.Data[CertKey], s.Data[KeyKey])
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

func TestServerCredentials(t *testing.T) {
	managerNS, gatewayNS := newNamespace(t), newNamespace(t)
	clock := newClock()
	opts := testOptions(managerNS, clock)
	m := newManager(t, opts)
	ensure(t, m)
	if err := m.EnsureClientSecret(context.Background(), gatewayNS, nil); err != nil {
		t.Fatal(err)
	}
	own, other := managerNS+"/egress", gatewayNS+"/egress"
	addr := xdsServer(t, m, own, other)
	serverName := opts.ServiceNames[2] // <service>.<namespace>.svc

	foreign := testpki.NewCA(t, "another CA").Issue(t, testpki.Options{CommonName: "portcullis-envoy", Client: true})
	tests := []struct {
		name     string
		tls      func(t *testing.T) *tls.Config
		gateway  string
		wantCode codes.Code // codes.OK: a response arrives
	}{
		{
			name: "the manager's client Secret fetches a Gateway of the manager's namespace",
			tls: func(t *testing.T) *tls.Config {
				return clientTLS(t, getSecret(t, managerNS, ClientSecretName), serverName, clock)
			},
			gateway: own, wantCode: codes.OK,
		},
		{
			name: "a namespace's Envoy client Secret fetches a Gateway of that namespace",
			tls: func(t *testing.T) *tls.Config {
				return clientTLS(t, getSecret(t, gatewayNS, EnvoyClientSecretName), serverName, clock)
			},
			gateway: other, wantCode: codes.OK,
		},
		{
			name: "a namespace's Envoy client Secret is refused a Gateway of another namespace",
			tls: func(t *testing.T) *tls.Config {
				return clientTLS(t, getSecret(t, gatewayNS, EnvoyClientSecretName), serverName, clock)
			},
			gateway: own, wantCode: codes.PermissionDenied,
		},
		{
			name: "a client certificate from another CA is refused in the handshake",
			tls: func(t *testing.T) *tls.Config {
				cfg := clientTLS(t, getSecret(t, managerNS, ClientSecretName), serverName, clock)
				cfg.Certificates = []tls.Certificate{foreign.TLS}
				return cfg
			},
			gateway: own, wantCode: codes.Unavailable,
		},
		{
			name: "a client without a certificate is refused in the handshake",
			tls: func(t *testing.T) *tls.Config {
				cfg := clientTLS(t, getSecret(t, managerNS, ClientSecretName), serverName, clock)
				cfg.Certificates = nil
				return cfg
			},
			gateway: own, wantCode: codes.Unavailable,
		},
		{
			name: "the server's own certificate is not accepted as a client certificate",
			tls: func(t *testing.T) *tls.Config {
				return clientTLS(t, getSecret(t, managerNS, ServerSecretName), serverName, clock)
			},
			gateway: own, wantCode: codes.Unavailable,
		},
		{
			name: "the client refuses the server under a name the certificate does not carry",
			tls: func(t *testing.T) *tls.Config {
				return clientTLS(t, getSecret(t, managerNS, ClientSecretName), "xds.example.com", clock)
			},
			gateway: own, wantCode: codes.Unavailable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := xdstest.FetchClusters(t, addr, tt.tls(t), tt.gateway)
			if got := status.Code(err); got != tt.wantCode {
				t.Fatalf("status = %v (%v), want %v", got, err, tt.wantCode)
			}
			if tt.wantCode == codes.OK && resp.GetTypeUrl() != resource.ClusterType {
				t.Fatalf("response = %v", resp)
			}
			if tt.wantCode == codes.PermissionDenied && !strings.Contains(err.Error(), gatewayNS) {
				t.Fatalf("refusal does not name the certificate's namespace: %v", err)
			}
		})
	}
}

func TestServerCredentialsAcrossCARotation(t *testing.T) {
	managerNS, laterNS := newNamespace(t), newNamespace(t)
	clock := newClock()
	start := clock.Now()
	opts := testOptions(managerNS, clock)
	opts.CALifetime, opts.LeafLifetime, opts.Propagation = 300*time.Hour, 90*time.Hour, time.Hour
	m := newManager(t, opts)
	ensure(t, m)
	addr := xdsServer(t, m, managerNS+"/egress", laterNS+"/egress")
	serverName := opts.ServiceNames[0]

	// Leaves issued at 150 h by the first CA are still valid after it is replaced at 200 h.
	clock.Set(start.Add(150 * time.Hour))
	ensure(t, m)
	oldClient := getSecret(t, managerNS, ClientSecretName)
	oldCA := storedCert(t, getSecret(t, managerNS, CASecretName), CertKey)

	clock.Set(start.Add(201 * time.Hour))
	ensure(t, m)
	newCA := storedCert(t, getSecret(t, managerNS, CASecretName), CertKey)
	if newCA.Equal(oldCA) {
		t.Fatal("the CA was not rotated")
	}
	if err := m.EnsureClientSecret(context.Background(), laterNS, nil); err != nil {
		t.Fatal(err)
	}
	newClient := getSecret(t, laterNS, EnvoyClientSecretName)
	if err := storedCert(t, newClient, CertKey).CheckSignatureFrom(newCA); err != nil {
		t.Fatalf("a client certificate created after the rotation is not signed by the new CA: %v", err)
	}

	tests := []struct {
		name    string
		secret  *corev1.Secret
		gateway string
	}{
		{"a client certificate of the old CA is still accepted", oldClient, managerNS + "/egress"},
		{"a client certificate of the new CA is accepted", newClient, laterNS + "/egress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := xdstest.FetchClusters(t, addr, clientTLS(t, tt.secret, serverName, clock), tt.gateway); err != nil {
				t.Fatal(err)
			}
		})
	}
}
