package envoyconfig

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// secret is the SDS resource of one IR secret: the only resource that carries key
// material. Errors name the secret, never its content.
func secret(s *ir.Secret) (*tlsv3.Secret, error) {
	out := &tlsv3.Secret{Name: s.Name}
	switch s.Kind {
	case ir.SecretTLSCertificate:
		if len(s.Certificate) == 0 || len(s.PrivateKey) == 0 {
			return nil, fmt.Errorf("secret %q: a TLS certificate needs a chain and a private key", s.Name)
		}
		out.Type = &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: inlineBytes(s.Certificate),
			PrivateKey:       inlineBytes(s.PrivateKey),
		}}
	case ir.SecretCACertificate:
		if len(s.Certificate) == 0 {
			return nil, fmt.Errorf("secret %q: a CA certificate secret needs a bundle", s.Name)
		}
		out.Type = &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa: inlineBytes(s.Certificate),
		}}
	case ir.SecretGeneric:
		if len(s.Value) == 0 {
			return nil, fmt.Errorf("secret %q: a generic secret needs a value", s.Name)
		}
		out.Type = &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{
			Secret: inlineBytes(s.Value),
		}}
	default:
		return nil, fmt.Errorf("secret %q: unknown kind %q", s.Name, s.Kind)
	}
	return out, nil
}

func inlineBytes(b []byte) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b}}
}

// checkSecret fails unless the IR holds a secret of that name and kind: a reference Envoy
// could not resolve would leave the listener or cluster warming forever.
func (b *builder) checkSecret(name string, kind ir.SecretKind) error {
	s, ok := b.secrets.get(name)
	if !ok {
		return fmt.Errorf("secret %q is not defined", name)
	}
	if s.Kind != kind {
		return fmt.Errorf("secret %q is a %s, want a %s", name, s.Kind, kind)
	}
	return nil
}
