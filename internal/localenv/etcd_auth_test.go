package localenv

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// checkEtcdAuthenticated asserts that etcd of a running control plane answers only a
// client holding a certificate of etcd's own CA: not plaintext, not a TLS client
// without a certificate, not the admin kubeconfig's certificate (the API server's CA);
// the API server's etcd client certificate is answered.
func checkEtcdAuthenticated(t *testing.T, cp *ControlPlane, o Options) {
	t.Helper()
	pki := func(name string) string { return filepath.Join(cp.Dir.PKI(), name) }
	for _, name := range []string{etcdCAFile, etcdServerKey, etcdClientKey} {
		if info, err := os.Stat(pki(name)); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", name, err)
		}
	}
	caPEM, err := os.ReadFile(pki(etcdCAFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	etcdClient, err := tls.LoadX509KeyPair(pki(etcdClientCert), pki(etcdClientKey))
	if err != nil {
		t.Fatal(err)
	}
	adminTLS, err := rest.TLSConfigFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := adminTLS.GetClientCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		url    string
		certs  []tls.Certificate
		wantOK bool
	}{
		{"plaintext is refused", "http://" + loopback(o.EtcdPort), nil, false},
		{"a TLS client without a certificate is refused", EtcdURL(o.EtcdPort), nil, false},
		{"the admin kubeconfig's certificate is refused", EtcdURL(o.EtcdPort), []tls.Certificate{*admin}, false},
		{"the API server's etcd client certificate is answered", EtcdURL(o.EtcdPort), []tls.Certificate{etcdClient}, true},
		{"the peer port refuses a TLS client without a certificate", "https://" + loopback(o.EtcdPeerPort), nil, false},
	}
	for _, tt := range tests {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, Certificates: tt.certs}}}
		err := get(client, tt.url+"/health")
		if ok := err == nil; ok != tt.wantOK {
			t.Errorf("%s: GET /health: %v", tt.name, err)
		}
	}
}
