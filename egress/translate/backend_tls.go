package translate

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// tlsOutcome is the TLS a Backend port originates and where it came from.
type tlsOutcome struct {
	tls       *ir.UpstreamTLS
	secrets   []ir.Secret
	policy    *gwapiv1.BackendTLSPolicy
	effective *egressv1alpha1.EffectiveTLS
	// ignored lists inline fields a BackendTLSPolicy overrides, for the Accepted message.
	ignored []string
}

// tlsInput is what deciding a port's TLS needs to know.
type tlsInput struct {
	backend    *egressv1alpha1.Backend
	inline     *egressv1alpha1.BackendTLS
	port       egressv1alpha1.BackendPort
	defaultSNI string
	// service and servicePort are set for Service destinations, where a policy may apply.
	service     *types.NamespacedName
	servicePort string
}

// backendTLS decides the TLS of one Backend port: a BackendTLSPolicy on a Service
// destination wins for server verification (the README's "How TLS is merged"); otherwise HTTPS and
// TLS ports originate TLS from the inline settings; HTTP and TCP ports send plaintext.
func (t *translator) backendTLS(in tlsInput) (tlsOutcome, *refError) {
	var policy *gwapiv1.BackendTLSPolicy
	if in.service != nil {
		policy = t.policyFor(*in.service, in.servicePort)
	}
	switch {
	case policy != nil:
		return t.mergeWithPolicy(in, policy)
	case in.port.Protocol == egressv1alpha1.PortProtocolHTTPS || in.port.Protocol == egressv1alpha1.PortProtocolTLS:
		return t.inlineTLS(in)
	}
	return tlsOutcome{}, nil
}

// inlineTLS builds upstream TLS from the Backend's own tls block (which may be absent:
// then the System trust store verifies the certificate against the hostname).
func (t *translator) inlineTLS(in tlsInput) (tlsOutcome, *refError) {
	spec := in.inline
	if spec == nil {
		spec = &egressv1alpha1.BackendTLS{}
	}
	out := &ir.UpstreamTLS{SNI: in.defaultSNI}
	if spec.ServerName != nil {
		out.SNI = *spec.ServerName
	}
	eff := &egressv1alpha1.EffectiveTLS{Source: egressv1alpha1.TLSSourceSystem, ServerName: out.SNI}
	var secrets []ir.Secret
	switch {
	case spec.InsecureSkipVerify != nil && *spec.InsecureSkipVerify:
		out.InsecureSkipVerify, eff.Source = true, egressv1alpha1.TLSSourceInsecure
	case len(spec.CACertificates) > 0:
		bundle, rerr := t.inlineCABundle(in.backend, spec.CACertificates)
		if rerr != nil {
			return tlsOutcome{}, rerr
		}
		out.CASecret, eff.Source = bundle.Name, egressv1alpha1.TLSSourceInline
		secrets = append(secrets, bundle)
	default:
		out.SystemCA = true
	}
	for _, san := range spec.SubjectAltNames {
		out.SubjectAltNames = append(out.SubjectAltNames, inlineSAN(san))
	}
	clientSecrets, rerr := t.applyClientParams(in.backend, spec, out, eff)
	if rerr != nil {
		return tlsOutcome{}, rerr
	}
	return tlsOutcome{tls: out, secrets: append(secrets, clientSecrets...), effective: eff}, nil
}

// applyClientParams sets what always comes from the Backend, policy or not: the client
// certificate, TLS versions, cipher suites and ALPN.
func (t *translator) applyClientParams(b *egressv1alpha1.Backend, spec *egressv1alpha1.BackendTLS, out *ir.UpstreamTLS, eff *egressv1alpha1.EffectiveTLS) ([]ir.Secret, *refError) {
	if rerr := checkCipherSuites(spec.CipherSuites); rerr != nil {
		return nil, rerr
	}
	out.CipherSuites, out.ALPN = spec.CipherSuites, spec.ALPNProtocols
	if spec.MinVersion != nil {
		out.MinVersion = string(*spec.MinVersion)
	}
	if spec.MaxVersion != nil {
		out.MaxVersion = string(*spec.MaxVersion)
	}
	if spec.ClientCertificate == nil {
		return nil, nil
	}
	ref := spec.ClientCertificate
	key := certKey(ref)
	secret, rerr := t.tlsCertificate(types.NamespacedName{Namespace: b.Namespace, Name: ref.SecretRef.Name}, key, egressv1alpha1.ReasonInvalidCertificateRef)
	if rerr != nil {
		rerr.msg = "tls.clientCertificate: " + rerr.msg
		return nil, rerr
	}
	out.ClientCertificateSecret, eff.ClientCertificate = secret.Name, ref.SecretRef.Name
	return []ir.Secret{secret}, nil
}

// certKey returns the data key of a certificate reference, wherever the user put it.
func certKey(ref *egressv1alpha1.CertificateRef) string {
	if ref.Key != nil {
		return *ref.Key
	}
	if ref.SecretRef.Key != nil {
		return *ref.SecretRef.Key
	}
	return ""
}

// inlineCABundle concatenates the Backend's CA certificates into one bundle secret. A
// single certificate is used as it is, without copying.
func (t *translator) inlineCABundle(b *egressv1alpha1.Backend, refs []egressv1alpha1.CertificateRef) (ir.Secret, *refError) {
	var data []byte
	for i := range refs {
		kind := "Secret"
		if refs[i].SecretRef.Kind != nil {
			kind = *refs[i].SecretRef.Kind
		}
		s, rerr := t.caBundle(types.NamespacedName{Namespace: b.Namespace, Name: refs[i].SecretRef.Name}, kind, certKey(&refs[i]), egressv1alpha1.ReasonInvalidCACertificateRef)
		if rerr != nil {
			rerr.msg = fmt.Sprintf("tls.caCertificates[%d]: %s", i, rerr.msg)
			return ir.Secret{}, rerr
		}
		if len(refs) == 1 {
			data = s.Certificate
		} else {
			data = append(data, s.Certificate...)
		}
	}
	return ir.Secret{Name: "ca/" + nameOf(b).String() + "/backend", Kind: ir.SecretCACertificate, Certificate: data}, nil
}

func inlineSAN(san egressv1alpha1.SubjectAltName) ir.SubjectAltName {
	if san.Type == egressv1alpha1.SubjectAltNameTypeURI && san.URI != nil {
		return ir.SubjectAltName{Type: "URI", Value: *san.URI}
	}
	if san.Hostname != nil {
		return ir.SubjectAltName{Type: "DNS", Value: *san.Hostname}
	}
	return ir.SubjectAltName{Type: "DNS"}
}

// mergeWithPolicy applies the README's "How TLS is merged": verification from the policy, client
// identity and parameters from the Backend, versions only tightened, never weakened.
func (t *translator) mergeWithPolicy(in tlsInput, p *gwapiv1.BackendTLSPolicy) (tlsOutcome, *refError) {
	spec := in.inline
	if spec == nil {
		spec = &egressv1alpha1.BackendTLS{}
	}
	if spec.InsecureSkipVerify != nil && *spec.InsecureSkipVerify {
		return tlsOutcome{}, newRefError(egressv1alpha1.ReasonInvalid, "tls.insecureSkipVerify cannot turn off the verification that BackendTLSPolicy %s requires; remove it", nameOf(p))
	}
	verify, secrets, rerr := t.policyVerification(p)
	if rerr != nil {
		return tlsOutcome{}, newRefError(egressv1alpha1.ReasonInvalidCACertificateRef, "%s", rerr.msg)
	}
	out := &verify
	eff := &egressv1alpha1.EffectiveTLS{Source: egressv1alpha1.TLSSourceBackendTLSPolicy, ServerName: out.SNI,
		PolicyRef: &egressv1alpha1.PolicyReference{Namespace: p.Namespace, Name: p.Name}}
	clientSecrets, rerr := t.applyClientParams(in.backend, spec, out, eff)
	if rerr != nil {
		return tlsOutcome{}, rerr
	}
	if rerr := tightenVersions(out, p); rerr != nil {
		return tlsOutcome{}, rerr
	}
	return tlsOutcome{tls: out, secrets: append(secrets, clientSecrets...), policy: p, effective: eff, ignored: ignoredInlineFields(spec)}, nil
}

// tightenVersions raises the minimum to the policy's option; an empty range is Invalid.
func tightenVersions(out *ir.UpstreamTLS, p *gwapiv1.BackendTLSPolicy) *refError {
	if v, ok := p.Spec.Options[MinTLSVersionOption]; ok {
		if v != "1.2" && v != "1.3" {
			return newRefError(egressv1alpha1.ReasonInvalid, "BackendTLSPolicy %s option %s must be 1.2 or 1.3, not %q", nameOf(p), MinTLSVersionOption, v)
		}
		if string(v) > out.MinVersion {
			out.MinVersion = string(v)
		}
	}
	if out.MinVersion != "" && out.MaxVersion != "" && out.MinVersion > out.MaxVersion {
		return newRefError(egressv1alpha1.ReasonInvalid, "BackendTLSPolicy %s requires TLS %s or higher but tls.maxVersion is %s: no version is left", nameOf(p), out.MinVersion, out.MaxVersion)
	}
	return nil
}

func ignoredInlineFields(spec *egressv1alpha1.BackendTLS) []string {
	var out []string
	if spec.ServerName != nil {
		out = append(out, "tls.serverName")
	}
	if len(spec.CACertificates) > 0 {
		out = append(out, "tls.caCertificates")
	}
	if spec.WellKnownCACertificates != nil {
		out = append(out, "tls.wellKnownCACertificates")
	}
	if len(spec.SubjectAltNames) > 0 {
		out = append(out, "tls.subjectAltNames")
	}
	return out
}

func ignoredMessage(o tlsOutcome) string {
	if len(o.ignored) == 0 || o.policy == nil {
		return ""
	}
	return fmt.Sprintf("; BackendTLSPolicy %s sets server verification, so %s %s ignored", nameOf(o.policy), strings.Join(o.ignored, ", "), pluralIs(len(o.ignored)))
}

func pluralIs(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
