package envoyconfig

import (
	"crypto/tls"
	"strconv"
	"sync"
	"testing"

	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/internal/testpki"
)

// testCA is the shared test PKI's CA under the names these tests use.
type testCA struct {
	*testpki.CA
	certPEM []byte
}

var (
	caOnce sync.Once
	ca     *testCA
)

// sharedCA returns the CA of this test process (made at test time: no key material is
// checked in).
func sharedCA(t testing.TB) *testCA {
	t.Helper()
	caOnce.Do(func() {
		c := testpki.NewCA(t, "portcullis test CA")
		ca = &testCA{CA: c, certPEM: c.CertPEM}
	})
	return ca
}

// leaf issues a certificate for the DNS names and URIs, usable by servers and clients.
func (c *testCA) leaf(t testing.TB, dnsNames []string, uris ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	name := "leaf"
	if len(dnsNames) > 0 {
		name = dnsNames[0]
	}
	p := c.Issue(t, testpki.Options{CommonName: name, DNSNames: dnsNames, URIs: uris, Client: true})
	return p.CertPEM, p.KeyPEM
}

// tlsCertificate is leaf as a crypto/tls certificate, for test servers.
func (c *testCA) tlsCertificate(t testing.TB, dnsNames ...string) tls.Certificate {
	t.Helper()
	return c.Issue(t, testpki.Options{CommonName: "server", DNSNames: dnsNames, Client: true}).TLS
}

// withRealPEM replaces the placeholder bytes of a golden IR's certificate secrets by real
// PEM, which Envoy parses even in validate mode. Generic secrets are kept.
func withRealPEM(t testing.TB, gw ir.Gateway) ir.Gateway {
	t.Helper()
	c := sharedCA(t)
	secrets := make([]ir.Secret, len(gw.Secrets))
	for i, s := range gw.Secrets {
		switch s.Kind {
		case ir.SecretTLSCertificate:
			s.Certificate, s.PrivateKey = c.leaf(t, []string{"secret-" + strconv.Itoa(i) + ".test"})
		case ir.SecretCACertificate:
			s.Certificate = c.certPEM
		}
		secrets[i] = s
	}
	gw.Secrets = secrets
	return gw
}
