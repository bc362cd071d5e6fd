package localenv

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// Files of etcd's PKI in Layout.PKI, made anew on every start. etcd has a CA of its own:
// a certificate of the API server's CA (the admin kubeconfig's) does not open etcd.
const (
	etcdCAFile     = "etcd-ca.crt"
	etcdServerCert = "etcd-server.crt" // serves clients and peers, and is etcd's peer client
	etcdServerKey  = "etcd-server.key"
	etcdClientCert = "apiserver-etcd-client.crt" // the API server's, the only etcd client
	etcdClientKey  = "apiserver-etcd-client.key"
)

// writeEtcdPKI makes etcd's CA, its serving (and peer) certificate and the API server's
// client certificate, all 0600, and returns a TLS configuration of that client for the
// health check.
func writeEtcdPKI(l Layout) (*tls.Config, error) {
	ca, err := NewCA("portcullis-local-etcd-ca")
	if err != nil {
		return nil, err
	}
	server, err := ca.Issue(CertSpec{CommonName: "etcd", Server: true, Client: true,
		DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}})
	if err != nil {
		return nil, err
	}
	client, err := ca.Issue(CertSpec{CommonName: "kube-apiserver-etcd-client", Client: true})
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		etcdCAFile: ca.CertPEM, etcdServerCert: server.CertPEM, etcdServerKey: server.KeyPEM,
		etcdClientCert: client.CertPEM, etcdClientKey: client.KeyPEM,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(l.PKI(), name), data, 0o600); err != nil {
			return nil, fmt.Errorf("etcd PKI: %w", err)
		}
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ca.Pool(), Certificates: []tls.Certificate{client.TLS}}, nil
}
