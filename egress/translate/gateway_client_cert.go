package translate

import (
	"slices"

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
