package translate

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// gatewayContext is one Gateway being translated.
type gatewayContext struct {
	gw         *gwapiv1.Gateway
	listeners  []*listenerContext
	conditions []metav1.Condition
	out        ir.Gateway
	secrets    map[string]ir.Secret
	clusters   map[string]*ir.Cluster // shared between Gateways: never modified
	// clientCert is spec.tls.backend.clientCertificateRef, resolved: presented to TLS
	// backends that name no client certificate of their own.
	clientCert *ir.Secret
	// clientCertProblem is why spec.tls.backend.clientCertificateRef cannot be used.
	clientCertProblem *refError
	// hosts collects, per Envoy port, the routes of each Host domain.
	hosts map[uint32]map[string][]*routeEntry
	// streams collects, per Envoy port, the TLSRoutes and TCPRoutes attached there.
	streams map[uint32][]streamEntry
	// refs is the number of backendRefs of the routes naming the Gateway, to size maps.
	refs int
	// isolated serves each caller only its namespace's routes (tenancy.go);
	// isolationProblem is a bad isolation setting, reported (isolation stays on).
	isolated         bool
	isolationProblem string
	// proxyCondition is ConditionForwardProxy, nil without the annotation.
	proxyCondition *metav1.Condition
	// record collects the route side being computed, reused is the one taken from the
	// Cache (route_side.go); at most one is set.
	record *routeSide
	reused *routeSide
	// prior is the route side a route delta refiles from: its tables' hosts are kept
	// where they are as they were (host_reuse.go).
	prior *routeSide
	// naming are the HTTPRoutes naming the Gateway, in order, once routeSideInputs
	// listed them all (each with an identity).
	naming []*gwapiv1.HTTPRoute
}

// translateGateway validates the Gateway's listeners, attaches routes and builds its IR.
// It returns false when the Gateway cannot be served at all.
func (t *translator) translateGateway(gw *gwapiv1.Gateway) (ir.Gateway, bool) {
	refs := 0
	if t.delta == nil {
		refs = t.backendRefsTo(gw) // a delta resolves the changed Backends' refs alone
	}
	g := &gatewayContext{
		gw: gw, out: ir.Gateway{Name: nameOf(gw).String()},
		secrets: make(map[string]ir.Secret, 2*refs), clusters: make(map[string]*ir.Cluster, refs),
		hosts: map[uint32]map[string][]*routeEntry{}, streams: map[uint32][]streamEntry{}, refs: refs,
	}
	g.isolated, g.isolationProblem = isolation(gw, t.classes[string(gw.Spec.GatewayClassName)])
	for i := range gw.Spec.Listeners {
		g.listeners = append(g.listeners, t.validateListener(g, &gw.Spec.Listeners[i]))
	}
	markConflicts(g.listeners)
	g.proxyCondition = forwardProxies(g)
	accepted := t.gatewayAccepted(g)
	t.gatewayClientCertificate(g)
	if accepted {
		t.attachHTTPRoutes(g)
		t.attachStreamRoutes(g)
		g.out.Listeners = t.buildListeners(g)
		t.keepRouteSide(g)
		g.out.Clusters, g.out.Secrets = t.gatewayClusters(g)
	}
	t.writeGatewayStatus(g, accepted)
	return g.out, accepted
}

// gatewayClusters lists the Gateway's clusters and secrets by name; a delta puts the
// ones it resolved in place of the last translation's.
func (t *translator) gatewayClusters(g *gatewayContext) ([]*ir.Cluster, []ir.Secret) {
	if t.delta != nil {
		return t.deltaClusters(g)
	}
	return sortedByKey(t.cache, t.epoch, g.out.Name+" clusters", g.clusters, func(c *ir.Cluster) *ir.Cluster { return c }),
		sortedByKey(t.cache, t.epoch, g.out.Name+" secrets", g.secrets, func(s ir.Secret) ir.Secret { return s })
}

// backendRefsTo counts the backendRefs of the routes that name the Gateway as a parent:
// the clusters it may get, so its maps are sized once instead of growing.
func (t *translator) backendRefsTo(gw *gwapiv1.Gateway) int {
	n := 0
	for _, r := range t.routes {
		for _, ref := range r.Spec.ParentRefs {
			if refersToGateway(ref, r.Namespace, gw) {
				for _, rule := range r.Spec.Rules {
					n += len(rule.BackendRefs)
				}
				break
			}
		}
	}
	return n
}

// gatewayAccepted decides the Gateway's Accepted condition from its listeners.
func (t *translator) gatewayAccepted(g *gatewayContext) bool {
	if len(g.gw.Spec.Addresses) > 0 {
		g.setGatewayCondition(false, string(gwapiv1.GatewayReasonUnsupportedAddress),
			"spec.addresses is not supported: Portcullis assigns the Gateway's address itself; remove spec.addresses")
		return false
	}
	if infra := g.gw.Spec.Infrastructure; infra != nil && infra.ParametersRef != nil {
		g.setGatewayCondition(false, string(gwapiv1.GatewayReasonInvalidParameters),
			"spec.infrastructure.parametersRef is not supported: Portcullis takes no Gateway parameters (spec.infrastructure.labels and annotations are applied); remove it")
		return false
	}
	if problem := infrastructureProblem(g.gw.Spec.Infrastructure); problem != "" {
		g.setGatewayCondition(false, string(gwapiv1.GatewayReasonInvalidParameters), problem)
		return false
	}
	valid, served := 0, 0
	for _, l := range g.listeners {
		if l.valid() {
			valid++
		}
		if l.served() {
			served++
		}
	}
	switch {
	case valid == 0:
		g.setGatewayCondition(false, string(gwapiv1.GatewayReasonListenersNotValid), "no listener is valid; see status.listeners")
		return false
	case served < len(g.listeners):
		g.setGatewayCondition(true, string(gwapiv1.GatewayReasonListenersNotValid),
			fmt.Sprintf("%d of %d listeners are invalid or not served; see status.listeners", len(g.listeners)-served, len(g.listeners)))
	default:
		g.setGatewayCondition(true, string(gwapiv1.GatewayReasonAccepted), "Gateway accepted")
	}
	return true
}

func (g *gatewayContext) setGatewayCondition(ok bool, reason, msg string) {
	g.conditions = setCondition(g.conditions, condition(string(gwapiv1.GatewayConditionAccepted), ok, reason, msg, g.gw.Generation))
}

// writeGatewayStatus records the Gateway's conditions and listener statuses. Programmed
// is Pending here; the publisher turns it True when Envoy acknowledges the configuration.
func (t *translator) writeGatewayStatus(g *gatewayContext, accepted bool) {
	programmed := condition(string(gwapiv1.GatewayConditionProgrammed), false, string(gwapiv1.GatewayReasonPending),
		"waiting for Envoy to acknowledge the configuration", g.gw.Generation)
	if !accepted {
		programmed = condition(string(gwapiv1.GatewayConditionProgrammed), false, string(gwapiv1.GatewayReasonInvalid),
			"the Gateway is not accepted", g.gw.Generation)
	}
	conds := setCondition(setCondition(g.conditions, g.resolvedRefsCondition()), programmed)
	conds = setCondition(conds, isolationCondition(g, g.out.Listeners))
	if g.proxyCondition != nil {
		conds = setCondition(conds, *g.proxyCondition)
	}
	st := &gwapiv1.GatewayStatus{Conditions: conds}
	for _, l := range g.listeners {
		st.Listeners = append(st.Listeners, l.status(g.gw.Generation))
	}
	t.result.Statuses.Gateways[nameOf(g.gw).String()] = st
}
