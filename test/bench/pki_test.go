package bench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"testing"
	"time"
)

// keyPair is a PEM certificate and its private key.
type keyPair struct {
	cert, key []byte
}

// pkiPool hands out distinct self-signed certificates, made once per process: the
// translator checks every client certificate and CA bundle, and identical PEM would let
// a content-keyed cache flatter the numbers.
var pkiPool struct {
	sync.Mutex
	pairs []keyPair
}

// distinctPairs returns n distinct self-signed ECDSA P-256 certificates and keys.
func distinctPairs(tb testing.TB, n int) []keyPair {
	tb.Helper()
	pairs, err := makePairs(n)
	if err != nil {
		tb.Fatal(err)
	}
	return pairs
}

func makePairs(n int) ([]keyPair, error) {
	pkiPool.Lock()
	defer pkiPool.Unlock()
	for len(pkiPool.pairs) < n {
		p, err := selfSigned(fmt.Sprintf("bench-%d", len(pkiPool.pairs)))
		if err != nil {
			return nil, err
		}
		pkiPool.pairs = append(pkiPool.pairs, p)
	}
	return pkiPool.pairs[:n], nil
}

// selfSigned makes a certificate usable as a client certificate and as its own CA.
func selfSigned(cn string) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return keyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return keyPair{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}
