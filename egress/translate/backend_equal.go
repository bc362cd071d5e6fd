package translate

import (
	"bytes"
	"maps"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// equalBackendSpec tells whether two Backend specs are identical Go values: pointers are
// compared by target, and a nil slice or map differs from an empty one, since either
// may be copied into the output. It is written out by hand because reflect.DeepEqual
// costs ten times more at ten thousand Backends; TestEqualBackendSpecCoversEveryField
// proves that every field of the API type is compared.
func equalBackendSpec(a, b *egressv1alpha1.BackendSpec) bool {
	return equalDestination(&a.Destination, &b.Destination) && sameSliceFunc(a.Extensions, b.Extensions, equalExtension)
}

func equalDestination(a, b *egressv1alpha1.BackendDestination) bool {
	return a.Type == b.Type && same(a.FQDN, b.FQDN, equalFQDN) && same(a.IP, b.IP, equalIP) &&
		same(a.KubernetesService, b.KubernetesService, equalServiceDestination) && sameSlice(a.Ports, b.Ports)
}

func equalFQDN(a, b *egressv1alpha1.FQDNDestination) bool {
	return a.Hostname == b.Hostname && same(a.TLS, b.TLS, equalBackendTLS) && same(a.Protocol, b.Protocol, equalProtocol)
}

func equalIP(a, b *egressv1alpha1.IPDestination) bool {
	return a.Address == b.Address && same(a.TLS, b.TLS, equalBackendTLS) && same(a.Protocol, b.Protocol, equalProtocol)
}

func equalServiceDestination(a, b *egressv1alpha1.ServiceDestination) bool {
	return a.Name == b.Name && same(a.TLS, b.TLS, equalBackendTLS) && same(a.Protocol, b.Protocol, equalProtocol)
}

func equalProtocol(a, b *egressv1alpha1.BackendProtocol) bool {
	return a.Type == b.Type && (a.Options == nil) == (b.Options == nil) && maps.Equal(a.Options, b.Options)
}

func equalBackendTLS(a, b *egressv1alpha1.BackendTLS) bool {
	return same(a.ServerName, b.ServerName, equalTarget) &&
		sameSliceFunc(a.CACertificates, b.CACertificates, equalCertificateRef) &&
		same(a.WellKnownCACertificates, b.WellKnownCACertificates, equalTarget) &&
		sameSliceFunc(a.SubjectAltNames, b.SubjectAltNames, equalSAN) &&
		same(a.ClientCertificate, b.ClientCertificate, equalCertificateRefPtr) &&
		same(a.InsecureSkipVerify, b.InsecureSkipVerify, equalTarget) &&
		same(a.MinVersion, b.MinVersion, equalTarget) && same(a.MaxVersion, b.MaxVersion, equalTarget) &&
		sameSlice(a.CipherSuites, b.CipherSuites) && sameSlice(a.ALPNProtocols, b.ALPNProtocols)
}

func equalCertificateRef(a, b egressv1alpha1.CertificateRef) bool {
	return a.SecretRef.Name == b.SecretRef.Name && same(a.SecretRef.Kind, b.SecretRef.Kind, equalTarget) &&
		same(a.SecretRef.Key, b.SecretRef.Key, equalTarget) && same(a.Key, b.Key, equalTarget)
}

func equalCertificateRefPtr(a, b *egressv1alpha1.CertificateRef) bool {
	return equalCertificateRef(*a, *b)
}

func equalSAN(a, b egressv1alpha1.SubjectAltName) bool {
	return a.Type == b.Type && same(a.Hostname, b.Hostname, equalTarget) && same(a.URI, b.URI, equalTarget)
}

func equalExtension(a, b egressv1alpha1.BackendExtension) bool {
	return a.Type == b.Type && same(a.Config, b.Config, equalJSON)
}

func equalJSON(a, b *apiextensionsv1.JSON) bool {
	return (a.Raw == nil) == (b.Raw == nil) && bytes.Equal(a.Raw, b.Raw)
}

// same compares two pointers: both nil, or both set with equal targets.
func same[T any](a, b *T, eq func(a, b *T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return eq(a, b)
}

func equalTarget[T comparable](a, b *T) bool { return *a == *b }

// sameSlice and sameSliceFunc tell nil and empty slices apart.
func sameSlice[T comparable](a, b []T) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

func sameSliceFunc[T any](a, b []T, eq func(a, b T) bool) bool {
	return (a == nil) == (b == nil) && slices.EqualFunc(a, b, eq)
}
