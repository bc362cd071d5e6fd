package v1alpha1

// BackendTLS says how the gateway originates TLS to a destination. Its fields line up
// with BackendTLSPolicy's validation so that a Service destination can merge the two.
// Server verification uses exactly one source: caCertificates, wellKnownCACertificates
// or insecureSkipVerify; with none of them set, the System trust store is used and the
// server's certificate is verified against serverName.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.caCertificates) && has(self.wellKnownCACertificates))",message="tls.caCertificates and tls.wellKnownCACertificates are mutually exclusive: trust your own CA bundle or the System store, not both"
// +kubebuilder:validation:XValidation:rule="!(has(self.caCertificates) && has(self.insecureSkipVerify) && self.insecureSkipVerify)",message="tls.insecureSkipVerify: true turns verification off, so tls.caCertificates would never be used: remove one of them"
// +kubebuilder:validation:XValidation:rule="!(has(self.wellKnownCACertificates) && has(self.insecureSkipVerify) && self.insecureSkipVerify)",message="tls.insecureSkipVerify: true turns verification off, so tls.wellKnownCACertificates would never be used: remove one of them"
// +kubebuilder:validation:XValidation:rule="!(has(self.subjectAltNames) && has(self.insecureSkipVerify) && self.insecureSkipVerify)",message="tls.insecureSkipVerify: true turns verification off, so tls.subjectAltNames would never be checked: remove one of them"
// +kubebuilder:validation:XValidation:rule="!(has(self.minVersion) && has(self.maxVersion)) || self.minVersion <= self.maxVersion",messageExpression="'tls.minVersion ' + self.minVersion + ' is higher than tls.maxVersion ' + self.maxVersion + ': no TLS version would be left'"
type BackendTLS struct {
	// serverName is the SNI sent to the destination and, unless subjectAltNames is set,
	// the name its certificate must carry. It defaults to the FQDN hostname.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?([.][a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$')",message="tls.serverName must be a lowercase RFC 1123 DNS name such as api.example.com (no IP address, wildcard or trailing dot)"
	ServerName *string `json:"serverName,omitempty"`

	// caCertificates are PEM CA bundles, from Secrets or ConfigMaps in the Backend's
	// namespace, that the destination's certificate must chain to.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	CACertificates []CertificateRef `json:"caCertificates,omitempty"`

	// wellKnownCACertificates trusts a well-known store; the only value is System, the
	// CA bundle that ships with the gateway's Envoy image.
	// +optional
	WellKnownCACertificates *WellKnownCACertificates `json:"wellKnownCACertificates,omitempty"`

	// subjectAltNames are the names the destination's certificate must carry (any one
	// matches). When set, they replace serverName for verification.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=5
	SubjectAltNames []SubjectAltName `json:"subjectAltNames,omitempty"`

	// clientCertificate is presented to the destination for mutual TLS: a Secret of type
	// kubernetes.io/tls in the Backend's namespace (certificate in key, default tls.crt;
	// private key in tls.key). It reaches Envoy only through SDS.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.secretRef.kind) || self.secretRef.kind == 'Secret'",message="tls.clientCertificate.secretRef.kind must be Secret: a client certificate and its private key come from a kubernetes.io/tls Secret"
	ClientCertificate *CertificateRef `json:"clientCertificate,omitempty"`

	// insecureSkipVerify turns off verification of the destination's certificate. The
	// connection is still encrypted but anyone on the path can impersonate the server. It
	// is refused under a BackendTLSPolicy.
	// +optional
	InsecureSkipVerify *bool `json:"insecureSkipVerify,omitempty"`

	// minVersion is the lowest TLS version offered: "1.2" (default) or "1.3". Quote it in
	// YAML.
	// +optional
	MinVersion *TLSVersion `json:"minVersion,omitempty"`

	// maxVersion is the highest TLS version offered: "1.2" or "1.3" (default). Quote it in
	// YAML.
	// +optional
	MaxVersion *TLSVersion `json:"maxVersion,omitempty"`

	// cipherSuites restricts the TLS 1.2 cipher suites offered, by their BoringSSL names:
	// ECDHE-ECDSA-AES128-GCM-SHA256, ECDHE-RSA-AES128-GCM-SHA256,
	// ECDHE-ECDSA-AES256-GCM-SHA384, ECDHE-RSA-AES256-GCM-SHA384,
	// ECDHE-ECDSA-CHACHA20-POLY1305, ECDHE-RSA-CHACHA20-POLY1305, ECDHE-ECDSA-AES128-SHA,
	// ECDHE-RSA-AES128-SHA, ECDHE-ECDSA-AES256-SHA, ECDHE-RSA-AES256-SHA,
	// AES128-GCM-SHA256, AES256-GCM-SHA384, AES128-SHA, AES256-SHA. Rule words (ALL,
	// HIGH) and 3DES are refused. TLS 1.3 suites are not configurable.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=14
	// +kubebuilder:validation:items:Enum=ECDHE-ECDSA-AES128-GCM-SHA256;ECDHE-RSA-AES128-GCM-SHA256;ECDHE-ECDSA-AES256-GCM-SHA384;ECDHE-RSA-AES256-GCM-SHA384;ECDHE-ECDSA-CHACHA20-POLY1305;ECDHE-RSA-CHACHA20-POLY1305;ECDHE-ECDSA-AES128-SHA;ECDHE-RSA-AES128-SHA;ECDHE-ECDSA-AES256-SHA;ECDHE-RSA-AES256-SHA;AES128-GCM-SHA256;AES256-GCM-SHA384;AES128-SHA;AES256-SHA
	CipherSuites []string `json:"cipherSuites,omitempty"`

	// alpnProtocols are offered in the TLS handshake (e.g. h2, http/1.1). When empty,
	// they follow the protocol type (h2 for HTTP2 and GRPC).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	ALPNProtocols []string `json:"alpnProtocols,omitempty"`
}

// WellKnownCACertificates names a well-known trust store.
// +kubebuilder:validation:Enum=System
type WellKnownCACertificates string

// WellKnownCACertificatesSystem is the trust store that ships with Envoy's image.
const WellKnownCACertificatesSystem WellKnownCACertificates = "System"

// TLSVersion is a TLS protocol version.
// +kubebuilder:validation:Enum="1.2";"1.3"
type TLSVersion string

const (
	// TLSVersion12 is TLS 1.2.
	TLSVersion12 TLSVersion = "1.2"
	// TLSVersion13 is TLS 1.3.
	TLSVersion13 TLSVersion = "1.3"
)

// CertificateRef points at a PEM value in a Secret or ConfigMap in the Backend's namespace.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.key) && has(self.secretRef.key)) || self.key == self.secretRef.key",message="key and secretRef.key name different keys: set the key in one place"
type CertificateRef struct {
	// secretRef names the object that holds the PEM data.
	// +required
	SecretRef ObjectKeyReference `json:"secretRef"`

	// key is the data key holding the PEM value. Defaults to ca.crt for CA certificates
	// and tls.crt for client certificates.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key *string `json:"key,omitempty"`
}

// ObjectKeyReference names a Secret or ConfigMap in the Backend's namespace.
type ObjectKeyReference struct {
	// name of the Secret or ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// kind is Secret (default) or ConfigMap. Client certificates come only from Secrets.
	// +optional
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Kind *string `json:"kind,omitempty"`

	// key is the data key holding the PEM value; the same as the enclosing key (the
	// Backend proposal's examples put it here). Set it in one place only.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key *string `json:"key,omitempty"`
}

// SubjectAltNameType is the kind of a subject alternative name.
// +kubebuilder:validation:Enum=Hostname;URI
type SubjectAltNameType string

const (
	// SubjectAltNameTypeHostname matches a DNS name in the certificate.
	SubjectAltNameTypeHostname SubjectAltNameType = "Hostname"
	// SubjectAltNameTypeURI matches a URI (such as a SPIFFE ID) in the certificate.
	SubjectAltNameTypeURI SubjectAltNameType = "URI"
)

// SubjectAltName is one name the destination's certificate must carry.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'Hostname' || (has(self.hostname) && !has(self.uri))",message="a subjectAltNames entry of type Hostname must set hostname and not uri"
// +kubebuilder:validation:XValidation:rule="self.type != 'URI' || (has(self.uri) && !has(self.hostname))",message="a subjectAltNames entry of type URI must set uri and not hostname"
type SubjectAltName struct {
	// type is Hostname or URI, and says which of hostname and uri is set.
	// +required
	Type SubjectAltNameType `json:"type"`

	// hostname is a DNS name the certificate must carry; a leading "*." matches one label.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^([*][.])?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?([.][a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$')",message="subjectAltNames hostname must be a lowercase DNS name, optionally starting with '*.'"
	Hostname *string `json:"hostname,omitempty"`

	// uri is a URI the certificate must carry, such as spiffe://example.org/ns/api.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z][a-zA-Z0-9+.-]*:[^ ]+$')",message="subjectAltNames uri must be an absolute URI such as spiffe://example.org/ns/api"
	URI *string `json:"uri,omitempty"`
}
