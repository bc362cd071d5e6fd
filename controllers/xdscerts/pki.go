package xdscerts

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"time"
)

// backdate moves NotBefore into the past so that a peer whose clock is a little behind
// accepts a certificate issued a moment ago.
const backdate = 5 * time.Minute

// renewAt is the share of a certificate's life after which it is replaced.
const (
	renewNumerator   = 2
	renewDenominator = 3
)

// keyPair is a certificate with its private key.
type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// issuedAt is when the certificate was made (NotBefore without the backdate).
func issuedAt(c *x509.Certificate) time.Time { return c.NotBefore.Add(backdate) }

// renewalTime is the moment 2/3 into the certificate's life, counted from its issue
// (the backdate is for clock skew, not life: counted in, a certificate living less than
// twice the backdate would be due before it was made).
func renewalTime(c *x509.Certificate) time.Time {
	issued := issuedAt(c)
	return issued.Add(c.NotAfter.Sub(issued) / renewDenominator * renewNumerator)
}

// leafRenewalTime is renewalTime, or sooner when the configured lifetime is shorter
// than the certificate's: shortening --xds-cert-lifetime takes effect on the
// certificates already issued, not only on the next ones.
func leafRenewalTime(c *x509.Certificate, lifetime time.Duration) time.Time {
	due := renewalTime(c)
	if lifetime <= 0 {
		return due
	}
	if capped := issuedAt(c).Add(lifetime / renewDenominator * renewNumerator); capped.Before(due) {
		return capped
	}
	return due
}

// newCA makes a self-signed ECDSA P-256 CA valid for lifetime from now.
func newCA(now time.Time, lifetime time.Duration) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return keyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: caCommonName, Organization: []string{organization}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return keyPair{}, fmt.Errorf("sign CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: cert, key: key}, nil
}

// leafSpec says what a leaf certificate is for.
type leafSpec struct {
	commonName string
	dnsNames   []string
	uris       []*url.URL
	usage      x509.ExtKeyUsage
}

// issue signs a new leaf for spec with ca. The leaf never outlives its CA.
func issue(ca keyPair, spec leafSpec, now time.Time, lifetime time.Duration) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return keyPair{}, err
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.commonName, Organization: []string{organization}},
		DNSNames:              spec.dnsNames,
		URIs:                  spec.uris,
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{spec.usage},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("sign %s certificate: %w", spec.commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: cert, key: key}, nil
}

func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return serial, nil
}

// matches tells whether the certificate carries exactly the names of spec.
func (s leafSpec) matches(c *x509.Certificate) bool {
	if c.Subject.CommonName != s.commonName || !slices.Equal(c.DNSNames, s.dnsNames) || len(c.URIs) != len(s.uris) {
		return false
	}
	for i, u := range s.uris {
		if c.URIs[i].String() != u.String() {
			return false
		}
	}
	return slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{s.usage})
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func keyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		// The error of MarshalPKCS8PrivateKey names the key type, never the key.
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// bundlePEM concatenates certificates, the newest CA first.
func bundlePEM(certs []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		b.Write(certPEM(c))
	}
	return b.Bytes()
}

// parseCerts reads every CERTIFICATE block of data.
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate")
	}
	return certs, nil
}

// parseKeyPair reads a certificate (the first of certData) and its ECDSA key and checks
// that they belong together. Errors never include key material.
func parseKeyPair(certData, keyData []byte) (keyPair, error) {
	certs, err := parseCerts(certData)
	if err != nil {
		return keyPair{}, err
	}
	block, _ := pem.Decode(keyData)
	if block == nil {
		return keyPair{}, errors.New("no PEM private key")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return keyPair{}, errors.New("private key is not PKCS#8")
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return keyPair{}, errors.New("private key is not ECDSA")
	}
	pub, ok := certs[0].PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return keyPair{}, errors.New("private key does not match the certificate")
	}
	return keyPair{cert: certs[0], key: key}, nil
}

// pool returns a CertPool holding certs.
func pool(certs []*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}
