package envoyconfig

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// upstreamTLS originates TLS to the cluster. Key material (client certificate, CA bundle)
// comes by SDS; the system trust store is a file in the Envoy image.
func (b *builder) upstreamTLS(c *ir.Cluster) (*corev3.TransportSocket, error) {
	t := c.TLS
	params, err := tlsParams(t)
	if err != nil {
		return nil, err
	}
	common := &tlsv3.CommonTlsContext{TlsParams: params, AlpnProtocols: alpn(t, c.Protocol)}
	if t.ClientCertificateSecret != "" {
		if err := b.checkSecret(t.ClientCertificateSecret, ir.SecretTLSCertificate); err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{b.sdsSecret(t.ClientCertificateSecret)}
	}
	if err := b.setServerVerification(common, t); err != nil {
		return nil, err
	}
	return tlsSocket(&tlsv3.UpstreamTlsContext{Sni: t.SNI, CommonTlsContext: common})
}

// setServerVerification trusts the CA secret or the system store, and requires one of
// the expected names. InsecureSkipVerify sets no validation context at all: Envoy does
// not verify a server certificate unless it has a trusted CA, and SAN checks without a
// verified chain would prove nothing.
func (b *builder) setServerVerification(common *tlsv3.CommonTlsContext, t *ir.UpstreamTLS) error {
	if n := count(t.CASecret != "", t.SystemCA, t.InsecureSkipVerify); n != 1 {
		return fmt.Errorf("want exactly one of caSecret, systemCA and insecureSkipVerify, have %d", n)
	}
	if t.InsecureSkipVerify {
		return nil
	}
	sans, err := sanMatchers(t)
	if err != nil {
		return err
	}
	if t.SystemCA {
		common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa:                 &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: b.opts.SystemCAFile}},
			MatchTypedSubjectAltNames: sans,
		}}
		return nil
	}
	if err := b.checkSecret(t.CASecret, ir.SecretCACertificate); err != nil {
		return fmt.Errorf("CA: %w", err)
	}
	// The CA bundle comes by SDS and is merged with the static part holding the names.
	common.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
		DefaultValidationContext:         &tlsv3.CertificateValidationContext{MatchTypedSubjectAltNames: sans},
		ValidationContextSdsSecretConfig: b.sdsSecret(t.CASecret),
	}}
	return nil
}

// sanMatchers are the names the server certificate must carry (any one). With none given,
// the SNI must be one of its DNS names: the usual hostname check of HTTPS clients.
func sanMatchers(t *ir.UpstreamTLS) ([]*tlsv3.SubjectAltNameMatcher, error) {
	sans := t.SubjectAltNames
	if len(sans) == 0 && t.SNI != "" {
		sans = []ir.SubjectAltName{{Type: "DNS", Value: t.SNI}}
	}
	out := make([]*tlsv3.SubjectAltNameMatcher, 0, len(sans))
	for _, s := range sans {
		switch s.Type {
		case "DNS":
			out = append(out, &tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_DNS, Matcher: dnsNameMatcher(s.Value)})
		case "URI":
			out = append(out, &tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_URI, Matcher: exactMatcher(s.Value)})
		default:
			return nil, fmt.Errorf("unknown subject alt name type %q", s.Type)
		}
	}
	return out, nil
}

// dnsNameMatcher matches a DNS SAN. A plain name is an exact match (Envoy itself lets a
// wildcard certificate such as "*.example.com" satisfy it). A wanted "*.example.com"
// means any single label, so it becomes the RE2 "^[^.]+\.example\.com$": it accepts
// "api.example.com" and a "*.example.com" wildcard certificate, but neither
// "a.b.example.com" (which a suffix match would let through) nor "example.com". An exact
// match on the literal "*.example.com" would refuse the common case of a certificate
// that names the host itself.
func dnsNameMatcher(name string) *matcherv3.StringMatcher {
	rest, ok := strings.CutPrefix(name, "*.")
	if !ok {
		return exactMatcher(name)
	}
	re := &matcherv3.RegexMatcher{Regex: `^[^.]+\.` + regexp.QuoteMeta(rest) + `$`}
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: re}}
}

// tlsParams bounds the TLS versions and sets the TLS 1.2 cipher suites; nil keeps Envoy's
// defaults.
func tlsParams(t *ir.UpstreamTLS) (*tlsv3.TlsParameters, error) {
	if t.MinVersion == "" && t.MaxVersion == "" && len(t.CipherSuites) == 0 {
		return nil, nil
	}
	lo, err := tlsVersion(t.MinVersion)
	if err != nil {
		return nil, err
	}
	hi, err := tlsVersion(t.MaxVersion)
	if err != nil {
		return nil, err
	}
	if lo != tlsv3.TlsParameters_TLS_AUTO && hi != tlsv3.TlsParameters_TLS_AUTO && lo > hi {
		return nil, errors.New("TLS minimum version is above the maximum")
	}
	return &tlsv3.TlsParameters{TlsMinimumProtocolVersion: lo, TlsMaximumProtocolVersion: hi, CipherSuites: t.CipherSuites}, nil
}

func tlsVersion(v string) (tlsv3.TlsParameters_TlsProtocol, error) {
	switch v {
	case "":
		return tlsv3.TlsParameters_TLS_AUTO, nil
	case "1.2":
		return tlsv3.TlsParameters_TLSv1_2, nil
	case "1.3":
		return tlsv3.TlsParameters_TLSv1_3, nil
	default:
		return 0, fmt.Errorf("unsupported TLS version %q (want 1.2 or 1.3)", v)
	}
}

// alpn offers the configured protocols, else h2 for HTTP/2 clusters (the server must
// agree, since the cluster speaks HTTP/2 explicitly), else nothing: servers then use
// HTTP/1.1.
func alpn(t *ir.UpstreamTLS, p ir.UpstreamProtocol) []string {
	switch {
	case len(t.ALPN) > 0:
		return t.ALPN
	case isHTTP2(p):
		return []string{"h2"}
	default:
		return nil
	}
}
