package translate

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// An XBackend (gateway.networking.x-k8s.io/v1alpha1, the Gateway API's experimental form
// of our Backend) is translated by converting it into the equivalent Backend of type
// FQDN and running that through the Backend pipeline: the DNS guard's vetted addresses,
// the refusal of Portcullis' own components, TLS origination and certificate checks are
// the very same code, so an XBackend is exactly as safe as the Backend it stands for.
// What the Backend API cannot express is refused with a message naming the XBackend's
// field: never a quiet fallback to less TLS.

// XBackendKind is the kind a backendRef names to send to an XBackend.
const XBackendKind = "XBackend"

// xbackendConversion is an XBackend's equivalent Backend and what its status says of it.
type xbackendConversion struct {
	b *egressv1alpha1.Backend
	// plaintext says why the XBackend sends plaintext ("" when it originates TLS).
	plaintext string
	// tcp: spec.protocol is TCP, which no HTTPRoute may send to.
	tcp bool
}

// convertXBackend returns the Backend an XBackend stands for, or why there is none.
func convertXBackend(x *gwapixv1alpha1.XBackend) (xbackendConversion, *refError) {
	host, e := xbackendHostname(&x.Spec)
	if e != nil {
		return xbackendConversion{}, e
	}
	port, e := xbackendPortNumber(x.Spec.Port)
	if e != nil {
		return xbackendConversion{}, e
	}
	tls, plaintext, e := convertXBackendTLS(x.Spec.TLS, x.Namespace)
	if e != nil {
		return xbackendConversion{}, e
	}
	portProtocol, protocol, e := convertXBackendProtocol(x.Spec.Protocol, tls != nil)
	if e != nil {
		return xbackendConversion{}, e
	}
	b := &egressv1alpha1.Backend{
		ObjectMeta: metav1.ObjectMeta{Namespace: x.Namespace, Name: x.Name, Generation: x.Generation},
		Spec: egressv1alpha1.BackendSpec{Destination: egressv1alpha1.BackendDestination{
			Type:  egressv1alpha1.DestinationTypeFQDN,
			FQDN:  &egressv1alpha1.FQDNDestination{Hostname: host, TLS: tls, Protocol: protocol},
			Ports: []egressv1alpha1.BackendPort{{Name: strconv.Itoa(port), Port: int32(port), Protocol: portProtocol}},
		}},
	}
	tcp := x.Spec.Protocol != nil && *x.Spec.Protocol == gwapixv1alpha1.BackendProtocolTCP
	return xbackendConversion{b: b, plaintext: plaintext, tcp: tcp}, nil
}

// xbackendHostname checks the destination: type ExternalHostname with an outside name.
func xbackendHostname(spec *gwapixv1alpha1.BackendSpec) (string, *refError) {
	if spec.Type != gwapixv1alpha1.BackendTypeExternalHostname {
		return "", newRefError(egressv1alpha1.ReasonInvalid, "spec.type %q is not supported; the only type is ExternalHostname", spec.Type)
	}
	if spec.ExternalHostname == nil {
		return "", newRefError(egressv1alpha1.ReasonInvalid, "spec.externalHostname is required when spec.type is ExternalHostname")
	}
	h := string(spec.ExternalHostname.Hostname)
	if e := checkExternalHostname(h); e != nil {
		return "", e
	}
	return h, nil
}

func xbackendPortNumber(p gwapixv1alpha1.BackendPort) (int, *refError) {
	if p.Port < 1 || p.Port > 65535 {
		return 0, newRefError(egressv1alpha1.ReasonInvalid, "spec.port.port %d is not a port number (1 to 65535)", p.Port)
	}
	return int(p.Port), nil
}

// convertXBackendProtocol maps spec.protocol (with whether TLS is originated) to the
// Backend port's protocol and the destination's protocol block. HTTP is HTTP/1.1, the
// Backend API's default: it has no "negotiate by ALPN" type.
func convertXBackendProtocol(p *gwapixv1alpha1.BackendProtocol, tls bool) (egressv1alpha1.PortProtocol, *egressv1alpha1.BackendProtocol, *refError) {
	httpPort := egressv1alpha1.PortProtocolHTTP
	if tls {
		httpPort = egressv1alpha1.PortProtocolHTTPS
	}
	typed := func(t egressv1alpha1.ProtocolType) *egressv1alpha1.BackendProtocol {
		return &egressv1alpha1.BackendProtocol{Type: t}
	}
	if p == nil {
		return httpPort, nil, nil
	}
	switch *p {
	case gwapixv1alpha1.BackendProtocolHTTP, gwapixv1alpha1.BackendProtocolHTTP11:
		return httpPort, nil, nil
	case gwapixv1alpha1.BackendProtocolHTTP2:
		return httpPort, typed(egressv1alpha1.ProtocolHTTP2), nil
	case gwapixv1alpha1.BackendProtocolH2C:
		if tls {
			return "", nil, newRefError(egressv1alpha1.ReasonUnsupportedProtocol, "spec.protocol H2C is HTTP/2 in cleartext but spec.tls.mode originates TLS: use HTTP2 for HTTP/2 over TLS, or spec.tls.mode None for h2c")
		}
		return httpPort, typed(egressv1alpha1.ProtocolHTTP2), nil
	case gwapixv1alpha1.BackendProtocolGRPC:
		return httpPort, typed(egressv1alpha1.ProtocolGRPC), nil
	case gwapixv1alpha1.BackendProtocolMCP:
		return httpPort, typed(egressv1alpha1.ProtocolMCP), nil
	case gwapixv1alpha1.BackendProtocolTCP:
		if tls {
			return egressv1alpha1.PortProtocolTLS, nil, nil
		}
		return egressv1alpha1.PortProtocolTCP, nil, nil
	}
	return "", nil, newRefError(egressv1alpha1.ReasonUnsupportedProtocol, "spec.protocol %q is not supported; supported: HTTP, HTTP11, HTTP2, H2C, GRPC, MCP, TCP", *p)
}

// convertXBackendTLS maps spec.tls to the Backend's inline TLS (nil: plaintext, and why).
func convertXBackendTLS(tls *gwapixv1alpha1.BackendTLS, ns string) (*egressv1alpha1.BackendTLS, string, *refError) {
	if tls == nil {
		return nil, "spec.tls is not set", nil
	}
	switch tls.Mode {
	case gwapixv1alpha1.BackendTLSModeNone:
		if e := refuseUnusedTLS(tls); e != nil {
			return nil, "", e
		}
		return nil, "spec.tls.mode is None", nil
	case gwapixv1alpha1.BackendTLSModeServerOnly, gwapixv1alpha1.BackendTLSModeClientAndServer:
	default:
		return nil, "", newRefError(egressv1alpha1.ReasonInvalid, "spec.tls.mode %q is not supported; use None, ServerOnly or ClientAndServer", tls.Mode)
	}
	out, e := convertValidation(&tls.Validation)
	if e != nil {
		return nil, "", e
	}
	if out.ClientCertificate, e = convertClientCertificate(tls, ns); e != nil {
		return nil, "", e
	}
	return out, "", nil
}

// refuseUnusedTLS refuses TLS settings that mode None would leave unused: a user who
// wrote a CA or a client certificate expects TLS, not plaintext.
func refuseUnusedTLS(tls *gwapixv1alpha1.BackendTLS) *refError {
	v := tls.Validation
	switch {
	case tls.ClientCertificateRef != nil:
		return newRefError(egressv1alpha1.ReasonInvalid, "spec.tls.clientCertificateRef is set but spec.tls.mode is None, which sends plaintext: use ClientAndServer")
	case len(v.CACertificateRefs) > 0 || v.WellKnownCACertificates != nil || v.Hostname != "" || len(v.SubjectAltNames) > 0:
		return newRefError(egressv1alpha1.ReasonInvalid, "spec.tls.validation is set but spec.tls.mode is None, which sends plaintext and verifies nothing: use ServerOnly, or remove spec.tls.validation")
	}
	return nil
}

// convertValidation maps BackendTLSPolicyValidation to the inline server verification.
// With neither caCertificateRefs nor wellKnownCACertificates the System store verifies
// the server, as for a Backend with no tls block.
func convertValidation(v *gwapiv1.BackendTLSPolicyValidation) (*egressv1alpha1.BackendTLS, *refError) {
	out := &egressv1alpha1.BackendTLS{}
	if len(v.CACertificateRefs) > 0 && v.WellKnownCACertificates != nil {
		return nil, newRefError(egressv1alpha1.ReasonInvalid, "spec.tls.validation sets both caCertificateRefs and wellKnownCACertificates: trust one of them")
	}
	if w := v.WellKnownCACertificates; w != nil {
		if *w != gwapiv1.WellKnownCACertificatesSystem {
			return nil, newRefError(egressv1alpha1.ReasonInvalid, "spec.tls.validation.wellKnownCACertificates %q is not supported; the only value is System", *w)
		}
		system := egressv1alpha1.WellKnownCACertificatesSystem
		out.WellKnownCACertificates = &system
	}
	for i, ref := range v.CACertificateRefs {
		if ref.Group != "" || (ref.Kind != "ConfigMap" && ref.Kind != "Secret") {
			return nil, newRefError(string(gwapiv1.RouteReasonInvalidKind), "spec.tls.validation.caCertificateRefs[%d]: kind %s/%s is not supported; use a ConfigMap or a Secret (key ca.crt)", i, ref.Group, ref.Kind)
		}
		kind := string(ref.Kind)
		out.CACertificates = append(out.CACertificates, egressv1alpha1.CertificateRef{SecretRef: egressv1alpha1.ObjectKeyReference{Name: string(ref.Name), Kind: &kind}})
	}
	if v.Hostname != "" {
		if e := checkServerName(string(v.Hostname)); e != nil {
			return nil, e
		}
		sni := string(v.Hostname)
		out.ServerName = &sni
	}
	for i, san := range v.SubjectAltNames {
		s, e := convertSAN(i, san)
		if e != nil {
			return nil, e
		}
		out.SubjectAltNames = append(out.SubjectAltNames, s)
	}
	return out, nil
}

func convertSAN(i int, san gwapiv1.SubjectAltName) (egressv1alpha1.SubjectAltName, *refError) {
	switch {
	case san.Type == gwapiv1.HostnameSubjectAltNameType && san.Hostname != "":
		h := string(san.Hostname)
		return egressv1alpha1.SubjectAltName{Type: egressv1alpha1.SubjectAltNameTypeHostname, Hostname: &h}, nil
	case san.Type == gwapiv1.URISubjectAltNameType && san.URI != "":
		u := string(san.URI)
		return egressv1alpha1.SubjectAltName{Type: egressv1alpha1.SubjectAltNameTypeURI, URI: &u}, nil
	}
	return egressv1alpha1.SubjectAltName{}, newRefError(egressv1alpha1.ReasonInvalid, "spec.tls.validation.subjectAltNames[%d]: type %q needs its own field set (hostname for Hostname, uri for URI)", i, san.Type)
}

// convertClientCertificate maps clientCertificateRef: required by ClientAndServer,
// refused otherwise, and only a Secret of the XBackend's own namespace.
func convertClientCertificate(tls *gwapixv1alpha1.BackendTLS, ns string) (*egressv1alpha1.CertificateRef, *refError) {
	ref := tls.ClientCertificateRef
	switch {
	case tls.Mode == gwapixv1alpha1.BackendTLSModeServerOnly && ref != nil:
		return nil, newRefError(egressv1alpha1.ReasonInvalid, "spec.tls.clientCertificateRef is set but spec.tls.mode is ServerOnly, which presents no certificate: use ClientAndServer")
	case tls.Mode == gwapixv1alpha1.BackendTLSModeServerOnly:
		return nil, nil
	case ref == nil:
		return nil, newRefError(egressv1alpha1.ReasonInvalid, "spec.tls.mode ClientAndServer needs spec.tls.clientCertificateRef")
	case (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret"):
		return nil, newRefError(string(gwapiv1.RouteReasonInvalidKind), "spec.tls.clientCertificateRef: kind %s/%s is not supported; use a Secret of type kubernetes.io/tls", deref(ref.Group), deref(ref.Kind))
	case ref.Namespace != nil && string(*ref.Namespace) != ns:
		return nil, newRefError(egressv1alpha1.ReasonInvalidCertificateRef, "spec.tls.clientCertificateRef.namespace %s: the client certificate must be a Secret in the XBackend's own namespace %s", *ref.Namespace, ns)
	}
	return &egressv1alpha1.CertificateRef{SecretRef: egressv1alpha1.ObjectKeyReference{Name: string(ref.Name)}}, nil
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}
