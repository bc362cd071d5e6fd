package translate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// validateListenerTLS resolves an HTTPS listener's certificates. Invalid references are
// reported; the listener is served with the valid ones and refused when none is valid.
// The certificates join the Gateway's secrets only when the listener is served (see
// buildListeners): a conflicted listener's Secret referenced by no Envoy listener would
// make the snapshot inconsistent and hold back the whole Gateway.
func (t *translator) validateListenerTLS(g *gatewayContext, l *listenerContext) {
	tlsCfg := l.spec.TLS
	if tlsCfg == nil || len(tlsCfg.CertificateRefs) == 0 {
		l.problem, l.problemMsg = string(gwapiv1.ListenerReasonInvalidCertificateRef), "an HTTPS listener needs tls.certificateRefs"
		return
	}
	if tlsCfg.Mode != nil && *tlsCfg.Mode != gwapiv1.TLSModeTerminate {
		l.problem, l.problemMsg = string(gwapiv1.ListenerReasonUnsupportedProtocol), "tls.mode Passthrough is not supported on HTTPS listeners; use Terminate"
		return
	}
	if unsupported := unsupportedListenerTLS(g.gw, tlsCfg); unsupported != "" {
		l.problem, l.problemMsg = string(gwapiv1.ListenerReasonUnsupportedValue), unsupported
		return
	}
	for i, ref := range tlsCfg.CertificateRefs {
		secret, rerr := t.listenerCertificate(g.gw, ref)
		if rerr != nil {
			l.refProblem, l.refProblemMsg = rerr.reason, fmt.Sprintf("tls.certificateRefs[%d]: %s", i, rerr.msg)
			continue
		}
		l.certSecrets = append(l.certSecrets, secret)
	}
	if len(l.certSecrets) == 0 {
		l.unservedMsg = "not served: no usable certificate: " + l.refProblemMsg
	}
}

func (t *translator) listenerCertificate(gw *gwapiv1.Gateway, ref gwapiv1.SecretObjectReference) (ir.Secret, *refError) {
	return t.gatewaySecretCertificate(gw, ref, string(gwapiv1.ListenerReasonInvalidCertificateRef), string(gwapiv1.ListenerReasonRefNotPermitted))
}

// gatewaySecretCertificate resolves a certificate a Gateway names: a kubernetes.io/tls
// Secret, in another namespace only under a ReferenceGrant. The reasons are the
// caller's condition reasons for an invalid reference and a refused one.
func (t *translator) gatewaySecretCertificate(gw *gwapiv1.Gateway, ref gwapiv1.SecretObjectReference, invalid, notPermitted string) (ir.Secret, *refError) {
	group, kind := "", "Secret"
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	if group != "" || kind != "Secret" {
		return ir.Secret{}, newRefError(invalid, "only core Secrets are supported, not %s/%s", group, kind)
	}
	ns := gw.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	target := types.NamespacedName{Namespace: ns, Name: string(ref.Name)}
	if !t.refAllowed(crossRef{gwapiv1.GroupName, "Gateway", gw.Namespace, "", "Secret", ns, string(ref.Name)}) {
		return ir.Secret{}, newRefError(notPermitted, "Secret %s is in another namespace and no ReferenceGrant allows it", target)
	}
	return t.tlsCertificate(target, "", invalid)
}

// unsupportedListenerTLS names TLS settings of an HTTPS listener that Portcullis does not
// implement. Serving the listener without them would be less safe than asked (frontend
// validation requires client certificates), so the listener is not served.
func unsupportedListenerTLS(gw *gwapiv1.Gateway, tlsCfg *gwapiv1.ListenerTLSConfig) string {
	if gw.Spec.TLS != nil && gw.Spec.TLS.Frontend != nil {
		return "spec.tls.frontend (client certificate validation) is not supported, and HTTPS listeners are not served without it; remove it to serve them"
	}
	if len(tlsCfg.Options) > 0 {
		return "tls.options are not supported: Portcullis defines none; remove them"
	}
	return ""
}
