package translate

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// refError is a reference that cannot be used, with the condition reason to report.
type refError struct {
	reason, msg string
}

func (e *refError) Error() string { return e.msg }

func newRefError(reason, format string, args ...any) *refError {
	return &refError{reason: reason, msg: fmt.Sprintf(format, args...)}
}

// tlsCertificate reads a kubernetes.io/tls Secret as a certificate chain and private key.
// The data is checked here so that a bad Secret becomes a condition, not an Envoy NACK.
func (t *translator) tlsCertificate(ref types.NamespacedName, certKey, reason string) (ir.Secret, *refError) {
	s, ok := t.secrets[ref]
	if !ok {
		return ir.Secret{}, newRefError(reason, "Secret %s not found", ref)
	}
	if s.Type != corev1.SecretTypeTLS {
		return ir.Secret{}, newRefError(reason, "Secret %s has type %q; a certificate needs type kubernetes.io/tls", ref, s.Type)
	}
	if certKey == "" {
		certKey = corev1.TLSCertKey
	}
	cert, _ := secretValue(s, certKey)
	key, _ := secretValue(s, corev1.TLSPrivateKeyKey)
	if err := checkKeyPair(cert, key, t.opts.Now); err != nil {
		return ir.Secret{}, newRefError(reason, "Secret %s: %v", ref, err)
	}
	return ir.Secret{Name: "tls/" + ref.String() + "/" + certKey, Kind: ir.SecretTLSCertificate, Certificate: cert, PrivateKey: key}, nil
}

// checkKeyPair parses a PEM chain and key, checks they belong together and, when now is
// set, that the certificate has not expired (a peer would refuse it). It never puts key
// material in the error.
func checkKeyPair(cert, key []byte, now time.Time) error {
	if len(cert) == 0 || len(key) == 0 {
		return errors.New("the certificate or the private key (tls.key) is empty")
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return errors.New("the certificate and private key are not a valid PEM key pair")
	}
	if now.IsZero() || pair.Leaf == nil {
		return nil
	}
	if now.After(pair.Leaf.NotAfter) {
		return fmt.Errorf("the certificate expired at %s; renew it", pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(pair.Leaf.NotBefore) {
		return fmt.Errorf("the certificate is not valid before %s", pair.Leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

// caBundle reads a PEM CA bundle from a Secret or ConfigMap.
func (t *translator) caBundle(ref types.NamespacedName, kind, key, reason string) (ir.Secret, *refError) {
	if key == "" {
		key = "ca.crt"
	}
	data, rerr := t.objectValue(ref, kind, key, reason)
	if rerr != nil {
		return ir.Secret{}, rerr
	}
	if err := checkCABundle(data); err != nil {
		return ir.Secret{}, newRefError(reason, "%s %s key %s: %v", kind, ref, key, err)
	}
	return ir.Secret{Name: "ca/" + ref.String() + "/" + kindSegment(kind) + "/" + key, Kind: ir.SecretCACertificate, Certificate: data}, nil
}

func kindSegment(kind string) string {
	if kind == "ConfigMap" {
		return "configmap"
	}
	return "secret"
}

// checkCABundle requires at least one PEM certificate and no unparsable one.
func checkCABundle(data []byte) error {
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("a certificate does not parse: %v", err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM certificate found")
	}
	return nil
}

// objectValue reads one key of a Secret or ConfigMap.
func (t *translator) objectValue(ref types.NamespacedName, kind, key, reason string) ([]byte, *refError) {
	switch kind {
	case "", "Secret":
		s, ok := t.secrets[ref]
		if !ok {
			return nil, newRefError(reason, "Secret %s not found", ref)
		}
		if v, ok := secretValue(s, key); ok {
			return v, nil
		}
		return nil, newRefError(reason, "Secret %s has no key %q", ref, key)
	case "ConfigMap":
		cm, ok := t.configMaps[ref]
		if !ok {
			return nil, newRefError(reason, "ConfigMap %s not found", ref)
		}
		if v, ok := cm.Data[key]; ok {
			return []byte(v), nil
		}
		if v, ok := cm.BinaryData[key]; ok {
			return v, nil
		}
		return nil, newRefError(reason, "ConfigMap %s has no key %q", ref, key)
	}
	return nil, newRefError(reason, "kind %q cannot hold certificates; use Secret or ConfigMap", kind)
}

// secretValue reads a Secret key from data, or from stringData as written in a file given
// to `portcullis translate` (the API server folds stringData into data).
func secretValue(s *corev1.Secret, key string) ([]byte, bool) {
	if v, ok := s.Data[key]; ok {
		return v, true
	}
	if v, ok := s.StringData[key]; ok {
		return []byte(v), true
	}
	return nil, false
}
