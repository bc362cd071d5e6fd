package translate

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// ConditionXBackendAddressesResolved is the XBackend parent condition that reports what the
// DNS guard found for the hostname, as AddressesResolved does on a Backend.
const ConditionXBackendAddressesResolved = "portcullis.io/AddressesResolved"

// maxXBackendParents is the XBackend CRD's limit of status.parents entries.
const maxXBackendParents = 32

// finishXBackendStatuses writes, for every XBackend that routes reference, one parent
// entry per Gateway. An XBackend no route references gets no status from us (the status
// writer removes entries of ours that are left).
func (t *translator) finishXBackendStatuses() {
	slots := make([]*xbackendSlot, 0, len(t.xbackends))
	for _, s := range t.xbackends {
		if len(s.gateways) > 0 {
			slots = append(slots, s)
		}
	}
	sort.Slice(slots, func(i, j int) bool { return lessName(slots[i].name, slots[j].name) })
	for _, s := range slots {
		conds := t.xbackendConditions(s)
		gateways := sortedNames(s.gateways)
		if len(gateways) > maxXBackendParents {
			gateways = gateways[:maxXBackendParents]
		}
		st := &gwapixv1alpha1.BackendStatus{}
		for _, gw := range gateways {
			st.Ancestors = append(st.Ancestors, gwapixv1alpha1.BackendAncestorStatus{
				ControllerName: gwapiv1.GatewayController(t.opts.ControllerName),
				AncestorRef:    gwapiv1.ParentReference{Group: ptrTo(gwapiv1.Group(gwapiv1.GroupName)), Kind: ptrTo(gwapiv1.Kind("Gateway")), Namespace: ptrTo(gwapiv1.Namespace(gw.Namespace)), Name: gwapiv1.ObjectName(gw.Name)},
				Conditions:     append([]metav1.Condition(nil), conds...),
			})
		}
		t.result.Statuses.XBackends[s.name.String()] = st
	}
}

// xbackendConditions are an XBackend's conditions, the same under every Gateway:
// Accepted and, once its hostname passed, what the DNS guard found for it.
func (t *translator) xbackendConditions(s *xbackendSlot) []metav1.Condition {
	gen := s.x.Generation
	if s.problem != nil {
		accepted := condition(egressv1alpha1.ConditionAccepted, false, s.problem.reason, s.problem.msg, gen)
		if s.tb == nil {
			return []metav1.Condition{accepted}
		}
		return []metav1.Condition{accepted, t.xbackendAddresses(s, gen)}
	}
	accepted := condition(egressv1alpha1.ConditionAccepted, true, egressv1alpha1.ReasonAccepted, "XBackend accepted: "+xbackendUse(s), gen)
	return []metav1.Condition{accepted, t.xbackendAddresses(s, gen)}
}

// xbackendUse says what the gateway does with the XBackend: requests of HTTPRoutes (its
// summary), connections of TLSRoutes and TCPRoutes passed through, or both.
func xbackendUse(s *xbackendSlot) string {
	if !s.streamed {
		return xbackendSummary(s)
	}
	b := s.conv.b
	msg := fmt.Sprintf("TLSRoutes and TCPRoutes pass connections through to %s:%d; there the client's TLS, if any, goes end to end and spec.tls does not apply",
		b.Spec.Destination.FQDN.Hostname, b.Spec.Destination.Ports[0].Port)
	if s.routed {
		msg = xbackendSummary(s) + "; " + msg
	}
	return msg
}

func (t *translator) xbackendAddresses(s *xbackendSlot, gen int64) metav1.Condition {
	host := s.tb.dest.hostname
	res, ok := t.addrs[host]
	c := addressesCondition(host, res, ok, gen)
	c.Type = ConditionXBackendAddressesResolved
	return c
}

// xbackendSummary says in one line what the gateway sends, and how it verifies the
// server: a plaintext XBackend says so, since nothing on the path is then protected.
func xbackendSummary(s *xbackendSlot) string {
	b := s.conv.b
	dest := fmt.Sprintf("%s:%d", b.Spec.Destination.FQDN.Hostname, b.Spec.Destination.Ports[0].Port)
	proto := "HTTP/1.1"
	if p := s.x.Spec.Protocol; p != nil && *p != gwapixv1alpha1.BackendProtocolHTTP && *p != gwapixv1alpha1.BackendProtocolHTTP11 {
		proto = string(*p)
	}
	if s.conv.plaintext != "" {
		return fmt.Sprintf("%s to %s in plaintext (%s): nothing on the path is encrypted or authenticated; set spec.tls.mode ServerOnly to originate TLS", proto, dest, s.conv.plaintext)
	}
	eff := s.tb.effective
	verify := "the System CAs"
	if eff != nil && eff.Source == egressv1alpha1.TLSSourceInline {
		verify = "spec.tls.validation.caCertificateRefs"
	}
	msg := fmt.Sprintf("%s over TLS to %s, server verified with %s", proto, dest, verify)
	if eff != nil {
		msg += ", SNI " + eff.ServerName
		if eff.ClientCertificate != "" {
			msg += ", client certificate from Secret " + eff.ClientCertificate
		}
	}
	return msg
}
