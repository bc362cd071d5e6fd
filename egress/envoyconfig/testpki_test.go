package envoyconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// testCA is a throw-away CA made at test time, so no key material is checked in.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

var (
	caOnce sync.Once
	ca     *testCA
	caErr  error
	serial int64 = 1
	serMu  sync.Mutex
)

func nextSerial() *big.Int {
	serMu.Lock()
	defer serMu.Unlock()
	serial++
	return big.NewInt(serial)
}

// sharedCA returns the CA of this test process.
func sharedCA(t testing.TB) *testCA {
	t.Helper()
	caOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			caErr = err
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "portcullis test CA"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(24 * time.Hour),
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			caErr = err
			return
		}
		cert, _ := x509.ParseCertificate(der)
		ca = &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	})
	if caErr != nil {
		t.Fatalf("test CA: %v", caErr)
	}
	return ca
}

// leaf issues a certificate for the DNS names and URIs, usable by servers and clients.
func (c *testCA) leaf(t testing.TB, dnsNames []string, uris ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      pkix.Name{CommonName: "portcullis test leaf"},
		DNSNames:     dnsNames,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, u := range uris {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// tlsCertificate is leaf as a crypto/tls certificate, for test servers.
func (c *testCA) tlsCertificate(t testing.TB, dnsNames ...string) tls.Certificate {
	t.Helper()
	certPEM, keyPEM := c.leaf(t, dnsNames)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
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
