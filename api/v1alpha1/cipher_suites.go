package v1alpha1

// SupportedCipherSuites are the TLS 1.2 cipher suites a Backend may name, in the order
// of the CRD's enum (the +kubebuilder:validation:items:Enum marker on
// BackendTLS.CipherSuites, which cannot refer to this list; a test keeps the two
// equal). Each is a single suite Envoy 1.40 (BoringSSL) loads; BoringSSL's rule words
// (ALL, HIGH), 3DES and PSK suites are left out on purpose, and so is anything Envoy
// would reject, which would hold back the whole Gateway's configuration.
var SupportedCipherSuites = []string{
	"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
	"ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA",
	"ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA",
	"AES128-GCM-SHA256", "AES256-GCM-SHA384",
	"AES128-SHA", "AES256-SHA",
}
