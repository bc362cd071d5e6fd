package xdscerts

import (
	"crypto/x509"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Secrets the manager keeps in its own namespace.
const (
	// CASecretName holds the signing CA (tls.crt, tls.key) and the trust bundle
	// (ca.crt: the signing CA first, then older CAs that are still valid).
	CASecretName = "portcullis-xds-ca"
	// ServerSecretName holds the xDS server's certificate and key, and the bundle.
	ServerSecretName = "portcullis-xds-server"
	// ClientSecretName holds an Envoy client certificate whose identity is the
	// manager's own namespace, and the bundle (kubernetes.io/tls plus ca.crt).
	ClientSecretName = "portcullis-xds-client"
)

// EnvoyClientSecretName is the Secret, one per namespace holding Gateways, that the
// Envoy pods of those Gateways mount (Secrets cannot be mounted across namespaces). It
// is a kubernetes.io/tls Secret plus ca.crt whose client certificate names the
// namespace (see NamespaceOf); EnsureClientSecret keeps it.
const EnvoyClientSecretName = "portcullis-envoy-xds-client"

// Keys of the Secrets.
const (
	CertKey   = corev1.TLSCertKey       // tls.crt
	KeyKey    = corev1.TLSPrivateKeyKey // tls.key
	BundleKey = "ca.crt"
)

// Labels of the Secrets.
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "portcullis"
	componentLabel = "app.kubernetes.io/component"
	// EnvoyClientLabel marks every EnvoyClientSecretName Secret, so that the manager
	// can find and renew them all.
	EnvoyClientLabel      = "portcullis.io/xds-client"
	envoyClientLabelValue = "envoy"
)

// Names inside the certificates.
const (
	organization     = "portcullis"
	caCommonName     = "portcullis-xds-ca"
	serverCommonName = "portcullis-xds"
	clientCommonName = "portcullis-envoy"
	identityPrefix   = "urn:portcullis:envoy:namespace:"
)

// ServiceDNSNames returns the names a client in the cluster may use for a Service:
// name, name.namespace, name.namespace.svc and name.namespace.svc.cluster.local.
func ServiceDNSNames(service, namespace string) []string {
	base := service + "." + namespace
	return []string{service, base, base + ".svc", base + ".svc.cluster.local"}
}

// identityURI is the URI SAN of the client certificate for Envoys of namespace.
func identityURI(namespace string) *url.URL {
	return &url.URL{Scheme: "urn", Opaque: strings.TrimPrefix(identityPrefix, "urn:") + namespace}
}

// NamespaceOf returns the namespace a client certificate was issued for: Envoys holding
// it may serve Gateways of that namespace only.
func NamespaceOf(cert *x509.Certificate) (string, bool) {
	for _, u := range cert.URIs {
		if ns, ok := strings.CutPrefix(u.String(), identityPrefix); ok && ns != "" {
			return ns, true
		}
	}
	return "", false
}

func serverSpec(names []string) leafSpec {
	return leafSpec{commonName: serverCommonName, dnsNames: names, usage: x509.ExtKeyUsageServerAuth}
}

func clientSpec(namespace string) leafSpec {
	return leafSpec{commonName: clientCommonName, uris: []*url.URL{identityURI(namespace)}, usage: x509.ExtKeyUsageClientAuth}
}
