package envoyconfig

import (
	"errors"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// downstreamTLS terminates client TLS with every certificate of the listener in one
// context: Envoy picks among them by SNI (falling back to the first). Certificates come
// by SDS so that rotation never rebuilds the listener and keys never sit in LDS.
func (b *builder) downstreamTLS(t *ir.ListenerTLS) (*corev3.TransportSocket, error) {
	if len(t.CertificateSecrets) == 0 {
		return nil, errors.New("TLS listener without certificate secrets")
	}
	refs := make([]*tlsv3.SdsSecretConfig, 0, len(t.CertificateSecrets))
	for _, name := range t.CertificateSecrets {
		if err := b.checkSecret(name, ir.SecretTLSCertificate); err != nil {
			return nil, err
		}
		refs = append(refs, b.sdsSecret(name))
	}
	return tlsSocket(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: refs,
		// The HCM codec is AUTO: offer HTTP/2 to clients that can speak it.
		AlpnProtocols: []string{"h2", "http/1.1"},
	}})
}
