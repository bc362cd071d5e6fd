package xdscerts

import (
	"crypto/tls"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// ServerTLSConfig returns a TLS configuration for the xDS server that, on every
// handshake, presents the serving certificate loaded by the last Ensure and requires a
// client certificate that chains to the current trust bundle. Handshakes fail until
// Ensure succeeded once.
func (m *Manager) ServerTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		NextProtos:         []string{"h2"},
		GetConfigForClient: m.configForClient,
	}
}

func (m *Manager) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	st := m.state.Load()
	if st == nil {
		return nil, ErrNotEnsured
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{st.server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool(st.ca.bundle),
		// gRPC refuses a TLS connection that negotiated no ALPN protocol.
		NextProtos: []string{"h2"},
		// Validity is judged by the same clock that decides renewals.
		Time: m.opts.Clock,
	}, nil
}

// ServerCredentials are gRPC transport credentials built on ServerTLSConfig.
func (m *Manager) ServerCredentials() credentials.TransportCredentials {
	return credentials.NewTLS(m.ServerTLSConfig())
}

// ServerOptions are the gRPC server options of an xDS server in a cluster: the
// credentials, and NodeGuard.
func (m *Manager) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.Creds(m.ServerCredentials()), grpc.ChainStreamInterceptor(NodeGuard)}
}
