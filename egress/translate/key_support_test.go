package translate

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

// TestKeyPairsEnvoyRefusesAreRefused: keys Go parses but Envoy will not load become a
// clear error (and so a condition), never a configuration Envoy rejects.
func TestKeyPairsEnvoyRefusesAreRefused(t *testing.T) {
	tests := []struct {
		name    string
		key     func() (crypto.Signer, error)
		wantErr string
	}{
		{name: "RSA 1024 is refused", key: func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 1024) },
			wantErr: "the certificate has a 1024-bit RSA key; Envoy needs at least 2048 bits"},
		{name: "ECDSA P-224 is refused", key: func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P224(), rand.Reader) },
			wantErr: "the certificate has an ECDSA key on curve P-224; Envoy supports P-256, P-384 and P-521"},
		{name: "RSA 2048 is accepted", key: func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 2048) }},
		{name: "ECDSA P-256 is accepted", key: func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }},
		{name: "ECDSA P-521 is accepted", key: func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P521(), rand.Reader) }},
		{name: "Ed25519 is accepted", key: func() (crypto.Signer, error) {
			_, k, err := ed25519.GenerateKey(rand.Reader)
			return k, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certPEM, keyPEM := selfSigned(t, tt.key)
			err := pairVerdict(parseKeyPair(certPEM, keyPEM), time.Now())
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// selfSigned makes a self-signed certificate for a fresh key, as PEM.
func selfSigned(t *testing.T, newKey func() (crypto.Signer, error)) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
}
