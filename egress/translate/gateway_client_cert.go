package translate

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// gatewayClientCertificate resolves spec.tls.backend.clientCertificateRef, the
// certificate the Gateway presents to TLS backends that name no client certificate of
// their own (a Backend's tls.clientCertificate stays per destination). A reference that
// cannot be used is kept for the Gateway's ResolvedRefs condition; such backends then
// get no client certificate, as if none was named.
func (t *translator) gatewayClientCertificate(g *gatewayContext) {
	tls := g.gw.Spec.TLS
	if tls == nil || tls.Backend == nil || tls.Backend.ClientCertificateRef == nil {
		return
	}
	secret, rerr := t.gatewaySecretCertificate(g.gw, *tls.Backend.ClientCertificateRef,
		string(gwapiv1.GatewayReasonInvalidClientCertificateRef), string(gwapiv1.GatewayReasonRefNotPermitted))
	if rerr != nil {
		g.clientCertProblem = rerr
		return
	}
	g.clientCert = &secret
}

// resolvedRefsCondition is the Gateway's ResolvedRefs: its own references (the backend
// client certificate), then a summary of its listeners'. It is always written, so a
// problem that is fixed does not linger.
func (g *gatewayContext) resolvedRefsCondition() metav1.Condition {
	typ, gen := string(gwapiv1.GatewayConditionResolvedRefs), g.gw.Generation
	if p := g.clientCertProblem; p != nil {
		return condition(typ, false, p.reason, "spec.tls.backend.clientCertificateRef: "+p.msg, gen)
	}
	var unresolved []string
	for _, l := range g.listeners {
		if l.refProblem != "" {
			unresolved = append(unresolved, string(l.spec.Name))
		}
	}
	if len(unresolved) > 0 {
		return condition(typ, false, string(gwapiv1.GatewayReasonListenersNotResolved),
			"unresolved references in listener(s) "+strings.Join(unresolved, ", ")+"; see status.listeners", gen)
	}
	return condition(typ, true, string(gwapiv1.GatewayReasonResolvedRefs), "all references resolved", gen)
}

// withClientCertificate gives a TLS cluster without a client certificate the Gateway's.
// Clusters are shared between Gateways, so the cluster is copied, never changed.
func (g *gatewayContext) withClientCertificate(c *ir.Cluster, secrets []ir.Secret) (*ir.Cluster, []ir.Secret) {
	if g.clientCert == nil || c.TLS == nil || c.TLS.ClientCertificateSecret != "" {
		return c, secrets
	}
	own := *c
	tls := *c.TLS
	tls.ClientCertificateSecret = g.clientCert.Name
	own.TLS = &tls
	return &own, append(slices.Clip(secrets), *g.clientCert)
}
