package translate

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// MinTLSVersionOption is the BackendTLSPolicy option that raises the lowest TLS version
// for every consumer of the Service.
const MinTLSVersionOption = "portcullis.io/min-tls-version"

// policyFor returns the BackendTLSPolicy in force for a Service port, marking the policies
// it beat as conflicted: a policy naming the port (sectionName) beats one that does not;
// among equals the oldest wins, then namespace/name.
func (t *translator) policyFor(svc types.NamespacedName, portName string) *gwapiv1.BackendTLSPolicy {
	var exact, general []*gwapiv1.BackendTLSPolicy
	for _, p := range t.policies {
		if p.Namespace != svc.Namespace {
			continue
		}
		for _, ref := range p.Spec.TargetRefs {
			if ref.Group != "" || ref.Kind != "Service" || string(ref.Name) != svc.Name {
				continue
			}
			switch {
			case ref.SectionName == nil:
				general = append(general, p)
			case portName != "" && string(*ref.SectionName) == portName:
				exact = append(exact, p)
			}
		}
	}
	for _, group := range [][]*gwapiv1.BackendTLSPolicy{exact, general} {
		if len(group) > 0 {
			return t.pickPolicy(group)
		}
	}
	return nil
}

func (t *translator) pickPolicy(ps []*gwapiv1.BackendTLSPolicy) *gwapiv1.BackendTLSPolicy {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i].CreationTimestamp, ps[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return lessName(nameOf(ps[i]), nameOf(ps[j]))
	})
	for _, loser := range ps[1:] {
		t.policyConflicts[nameOf(loser)] = fmt.Sprintf("BackendTLSPolicy %s targets the same Service port and takes precedence (older, or first by name)", nameOf(ps[0]))
	}
	return ps[0]
}

// policyVerification turns a policy's validation into upstream TLS verification settings
// and the CA secret to serve; an unusable CA reference is a refError.
func (t *translator) policyVerification(p *gwapiv1.BackendTLSPolicy) (ir.UpstreamTLS, []ir.Secret, *refError) {
	v := p.Spec.Validation
	out := ir.UpstreamTLS{SNI: string(v.Hostname)}
	for _, san := range v.SubjectAltNames {
		out.SubjectAltNames = append(out.SubjectAltNames, policySAN(san))
	}
	if v.WellKnownCACertificates != nil {
		out.SystemCA = true
		return out, nil, nil
	}
	bundle, rerr := t.policyCABundle(p)
	if rerr != nil {
		return out, nil, rerr
	}
	out.CASecret = bundle.Name
	return out, []ir.Secret{bundle}, nil
}

func policySAN(san gwapiv1.SubjectAltName) ir.SubjectAltName {
	if san.Type == gwapiv1.URISubjectAltNameType {
		return ir.SubjectAltName{Type: "URI", Value: string(san.URI)}
	}
	return ir.SubjectAltName{Type: "DNS", Value: string(san.Hostname)}
}

// policyCABundle concatenates the policy's CA certificates into one bundle.
func (t *translator) policyCABundle(p *gwapiv1.BackendTLSPolicy) (ir.Secret, *refError) {
	var data []byte
	for i, ref := range p.Spec.Validation.CACertificateRefs {
		if ref.Group != "" || (ref.Kind != "ConfigMap" && ref.Kind != "Secret") {
			return ir.Secret{}, newRefError(string(gwapiv1.BackendTLSPolicyReasonInvalidKind), "BackendTLSPolicy %s validation.caCertificateRefs[%d]: kind %s/%s is not supported; use a ConfigMap or Secret", nameOf(p), i, ref.Group, ref.Kind)
		}
		s, rerr := t.caBundle(types.NamespacedName{Namespace: p.Namespace, Name: string(ref.Name)}, string(ref.Kind), "ca.crt", string(gwapiv1.BackendTLSPolicyReasonInvalidCACertificateRef))
		if rerr != nil {
			rerr.msg = fmt.Sprintf("BackendTLSPolicy %s validation.caCertificateRefs[%d]: %s", nameOf(p), i, rerr.msg)
			return ir.Secret{}, rerr
		}
		data = append(data, s.Certificate...)
	}
	return ir.Secret{Name: "ca/" + nameOf(p).String() + "/backendtlspolicy", Kind: ir.SecretCACertificate, Certificate: data}, nil
}

// recordAncestor notes that a Gateway's routes reach a Service that the policy targets.
func (t *translator) recordAncestor(p *gwapiv1.BackendTLSPolicy, gw *gwapiv1.Gateway) {
	key := nameOf(p)
	if t.policyAncestors[key] == nil {
		t.policyAncestors[key] = map[types.NamespacedName]bool{}
	}
	t.policyAncestors[key][nameOf(gw)] = true
}

// recordAncestorsForService records the Gateway as an ancestor of every policy that
// targets the Service, so losers report Conflicted too.
func (t *translator) recordAncestorsForService(svc types.NamespacedName, gw *gwapiv1.Gateway) {
	for _, p := range t.policies {
		if p.Namespace != svc.Namespace {
			continue
		}
		for _, ref := range p.Spec.TargetRefs {
			if ref.Group == "" && ref.Kind == "Service" && string(ref.Name) == svc.Name {
				t.recordAncestor(p, gw)
			}
		}
	}
}

// recordAncestorsForBackend records the Gateway for policies that wrongly target a Backend.
func (t *translator) recordAncestorsForBackend(b types.NamespacedName, gw *gwapiv1.Gateway) {
	for _, p := range t.policies {
		if p.Namespace == b.Namespace && targetsBackend(p, b.Name) {
			t.recordAncestor(p, gw)
		}
	}
}

func targetsBackend(p *gwapiv1.BackendTLSPolicy, name string) bool {
	for _, ref := range p.Spec.TargetRefs {
		if string(ref.Group) == egressv1alpha1.GroupVersion.Group && ref.Kind == egressv1alpha1.BackendKind && string(ref.Name) == name {
			return true
		}
	}
	return false
}

// finishPolicyStatuses writes one ancestor status per (policy, Gateway that reaches it).
func (t *translator) finishPolicyStatuses() {
	for _, p := range t.policies {
		gateways := sortedNames(t.policyAncestors[nameOf(p)])
		if len(gateways) == 0 {
			continue
		}
		conds := t.policyConditions(p)
		var out []gwapiv1.PolicyAncestorStatus
		for _, gw := range gateways {
			out = append(out, gwapiv1.PolicyAncestorStatus{
				AncestorRef:    gwapiv1.ParentReference{Group: ptrTo(gwapiv1.Group(gwapiv1.GroupName)), Kind: ptrTo(gwapiv1.Kind("Gateway")), Namespace: ptrTo(gwapiv1.Namespace(gw.Namespace)), Name: gwapiv1.ObjectName(gw.Name)},
				ControllerName: gwapiv1.GatewayController(t.opts.ControllerName),
				Conditions:     conds,
			})
		}
		t.result.Statuses.BackendTLSPolicies[nameOf(p).String()] = out
	}
}

// policyConditions computes a policy's Accepted and ResolvedRefs conditions.
func (t *translator) policyConditions(p *gwapiv1.BackendTLSPolicy) []metav1.Condition {
	gen := p.Generation
	accepted := condition(string(gwapiv1.PolicyConditionAccepted), true, string(gwapiv1.PolicyReasonAccepted), "policy accepted", gen)
	resolved := condition(string(gwapiv1.BackendTLSPolicyConditionResolvedRefs), true, string(gwapiv1.BackendTLSPolicyReasonResolvedRefs), "all references resolved", gen)
	_, _, rerr := t.policyVerification(p)
	switch {
	case targetsBackendKind(p):
		accepted = condition(string(gwapiv1.PolicyConditionAccepted), false, string(gwapiv1.PolicyReasonInvalid),
			"a BackendTLSPolicy cannot target a Portcullis Backend: use spec.destination.*.tls on the Backend", gen)
	case rerr != nil:
		resolved = condition(string(gwapiv1.BackendTLSPolicyConditionResolvedRefs), false, rerr.reason, rerr.msg, gen)
		accepted = condition(string(gwapiv1.PolicyConditionAccepted), false, string(gwapiv1.BackendTLSPolicyReasonNoValidCACertificate), rerr.msg, gen)
	case t.policyConflicts[nameOf(p)] != "":
		accepted = condition(string(gwapiv1.PolicyConditionAccepted), false, string(gwapiv1.PolicyReasonConflicted), t.policyConflicts[nameOf(p)], gen)
	}
	return []metav1.Condition{accepted, resolved}
}

func targetsBackendKind(p *gwapiv1.BackendTLSPolicy) bool {
	for _, ref := range p.Spec.TargetRefs {
		if string(ref.Group) == egressv1alpha1.GroupVersion.Group && ref.Kind == egressv1alpha1.BackendKind {
			return true
		}
	}
	return false
}

func sortedNames(m map[types.NamespacedName]bool) []types.NamespacedName {
	out := make([]types.NamespacedName, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return lessName(out[i], out[j]) })
	return out
}
