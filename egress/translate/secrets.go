package translate

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	if certKey == "" {
		certKey = corev1.TLSCertKey
	}
	cert := t.read("Secret", ref, certKey)
	if !cert.found {
		return ir.Secret{}, newRefError(reason, "Secret %s not found", ref)
	}
	if cert.secretType != corev1.SecretTypeTLS {
		return ir.Secret{}, newRefError(reason, "Secret %s has type %q; a certificate needs type kubernetes.io/tls", ref, cert.secretType)
	}
	key := t.read("Secret", ref, corev1.TLSPrivateKeyKey)
	if err := t.checkKeyPair(cert.value, key.value); err != nil {
		return ir.Secret{}, newRefError(reason, "Secret %s: %v", ref, err)
	}
	return ir.Secret{Name: "tls/" + ref.String() + "/" + certKey, Kind: ir.SecretTLSCertificate, Certificate: cert.value, PrivateKey: key.value}, nil
}

// checkKeyPair parses a PEM chain and key (through the cache), checks they belong
// together and, when now is set, that the certificate has not expired (a peer would
// refuse it). It never puts key material in the error.
func (t *translator) checkKeyPair(cert, key []byte) error {
	if len(cert) == 0 || len(key) == 0 {
		return errors.New("the certificate or the private key (tls.key) is empty")
	}
	pair := t.cache.keyPair(t.epoch, cert, key)
	t.reads.keyPairChecked(pair)
	return t.verdict(pair)
}

// verdict is pairVerdict at Options.Now, noting when that verdict will change.
func (t *translator) verdict(pair pairEntry) error {
	now := t.opts.Now
	if !now.IsZero() && pair.leaf && !pair.invalid && pair.unsupported == "" {
		var next time.Time
		switch {
		case now.Before(pair.notBefore):
			next = pair.notBefore
		case !now.After(pair.notAfter):
			next = pair.notAfter.Add(time.Nanosecond) // expired once past notAfter
		}
		t.validUntil = earlier(t.validUntil, next)
	}
	return pairVerdict(pair, now)
}

// earlier is the earlier of two times, where zero is never.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// pairVerdict is checkKeyPair's verdict on a parsed key pair at a time (none when zero).
func pairVerdict(pair pairEntry, now time.Time) error {
	if pair.invalid {
		return errors.New("the certificate and private key are not a valid PEM key pair")
	}
	if pair.unsupported != "" {
		return errors.New(pair.unsupported)
	}
	if now.IsZero() || !pair.leaf {
		return nil
	}
	if now.After(pair.notAfter) {
		return fmt.Errorf("the certificate expired at %s; renew it", pair.notAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(pair.notBefore) {
		return fmt.Errorf("the certificate is not valid before %s", pair.notBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

// parseKeyPair is the clock-free part of checkKeyPair, the part worth caching.
func parseKeyPair(cert, key []byte) pairEntry {
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return pairEntry{invalid: true}
	}
	out := pairEntry{leaf: pair.Leaf != nil}
	if out.leaf {
		out.notBefore, out.notAfter = pair.Leaf.NotBefore, pair.Leaf.NotAfter
		out.unsupported = envoyKeySupport(pair.Leaf.PublicKey)
	}
	return out
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
	if err := t.cache.caBundle(t.epoch, data); err != nil {
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
	if kind == "" {
		kind = "Secret"
	}
	if kind != "Secret" && kind != "ConfigMap" {
		return nil, newRefError(reason, "kind %q cannot hold certificates; use Secret or ConfigMap", kind)
	}
	r := t.read(kind, ref, key)
	switch {
	case !r.found:
		return nil, newRefError(reason, "%s %s not found", kind, ref)
	case !r.has:
		return nil, newRefError(reason, "%s %s has no key %q", kind, ref, key)
	}
	return r.value, nil
}

// valueRead is one key of a Secret or ConfigMap as translation saw it.
type valueRead struct {
	kind, key  string // kind is Secret or ConfigMap
	ref        types.NamespacedName
	found      bool              // the object exists
	secretType corev1.SecretType // the type of a Secret
	has        bool              // the key exists
	value      []byte
}

// read looks up one key of a Secret or ConfigMap. Translation reads them through here
// only, so that a unit notes every object it read (units.go).
func (t *translator) read(kind string, ref types.NamespacedName, key string) valueRead {
	o := t.object(kind, ref)
	t.reads.sawObject(kind, ref, o.meta())
	return o.read(kind, ref, key)
}

func (t *translator) lookup(kind string, ref types.NamespacedName, key string) valueRead {
	return t.object(kind, ref).read(kind, ref, key)
}

// heldObject is the Secret or ConfigMap a reference finds, if any.
type heldObject struct {
	secret    *corev1.Secret
	configMap *corev1.ConfigMap
}

func (t *translator) object(kind string, ref types.NamespacedName) heldObject {
	switch kind {
	case "Secret":
		return heldObject{secret: t.secrets[ref]}
	case "ConfigMap":
		return heldObject{configMap: t.configMaps[ref]}
	}
	return heldObject{}
}

// meta is the object found, or nil.
func (o heldObject) meta() metav1.Object {
	switch {
	case o.secret != nil:
		return o.secret
	case o.configMap != nil:
		return o.configMap
	}
	return nil
}

// read reads one key of the object found for (kind, ref).
func (o heldObject) read(kind string, ref types.NamespacedName, key string) valueRead {
	r := valueRead{kind: kind, ref: ref, key: key}
	switch {
	case o.secret != nil:
		r.found, r.secretType = true, o.secret.Type
		r.value, r.has = secretValue(o.secret, key)
	case o.configMap != nil:
		r.found = true
		r.value, r.has = configMapValue(o.configMap, key)
	}
	return r
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

func configMapValue(cm *corev1.ConfigMap, key string) ([]byte, bool) {
	if v, ok := cm.Data[key]; ok {
		return []byte(v), true
	}
	if v, ok := cm.BinaryData[key]; ok {
		return v, true
	}
	return nil, false
}
