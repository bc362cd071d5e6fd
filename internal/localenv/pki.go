package localenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// certLifetime is long enough for any local session and short enough that a forgotten
// key is soon worthless; every start issues new certificates anyway.
const certLifetime = 30 * 24 * time.Hour

// CA is a certificate authority made at start, for the local API server and the demo.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
}

// KeyPair is an issued certificate with its key, in PEM and ready for crypto/tls.
type KeyPair struct {
	CertPEM, KeyPEM []byte
	TLS             tls.Certificate
}

// CertSpec describes a certificate to issue.
type CertSpec struct {
	CommonName    string
	Organizations []string
	DNSNames      []string
	IPs           []net.IP
	Server        bool
	Client        bool
}

// NewCA creates a self-signed CA.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(pkix.Name{CommonName: commonName})
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("localenv: create CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key}, nil
}

// Pool is a certificate pool trusting only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issue signs a certificate for spec.
func (ca *CA) Issue(spec CertSpec) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	tmpl, err := template(pkix.Name{CommonName: spec.CommonName, Organization: spec.Organizations})
	if err != nil {
		return KeyPair{}, err
	}
	tmpl.DNSNames, tmpl.IPAddresses = spec.DNSNames, spec.IPs
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if spec.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("localenv: issue %s: %w", spec.CommonName, err)
	}
	keyPEM, err := ecKeyPEM(key)
	if err != nil {
		return KeyPair{}, err
	}
	pair := KeyPair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: keyPEM}
	pair.TLS, err = tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	return pair, err
}

// newSigningKey makes the key the API server signs service account tokens with.
func newSigningKey() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return ecKeyPEM(key)
}

func template(subject pkix.Name) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{SerialNumber: serial, Subject: subject, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certLifetime)}, nil
}

func ecKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
