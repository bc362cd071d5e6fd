package translate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// finishBackendStatuses writes the status of every Backend, referenced or not. The
// Backends are visited in no order (sorting ten thousand names cost a few milliseconds
// a translation); only the warnings need one, so they are sorted by name alone. The
// map is sized for every Backend here, not by newTranslator: a delta takes a copy of
// the last translation's (finishDeltaStatuses), and one sized for 10,000 made for
// nothing was 0.4 MB a change.
func (t *translator) finishBackendStatuses() {
	if len(t.result.Statuses.Backends) == 0 {
		t.result.Statuses.Backends = make(map[string]*egressv1alpha1.BackendStatus, len(t.backends))
	}
	var warnings []Warning
	for n, s := range t.backends {
		tb := t.translateBackend(s)
		t.result.Statuses.Backends[tb.key()] = t.backendStatusOf(n, tb)
		t.fileBackendGateways(tb)
		if tb.ignoredMsg != "" {
			warnings = append(warnings, backendWarning(n, tb))
		}
	}
	sortWarnings(warnings)
	t.result.Warnings = append(t.result.Warnings, warnings...)
}

// backendWarning is the Warning about a Backend's inline TLS that a policy overrides.
func backendWarning(n types.NamespacedName, tb *translatedBackend) Warning {
	return Warning{Kind: egressv1alpha1.BackendKind, Namespace: n.Namespace, Name: n.Name,
		Reason: ReasonIgnoredInlineTLS, Message: strings.TrimPrefix(tb.ignoredMsg, "; ")}
}

// sortWarnings sorts warnings by the name of their object.
func sortWarnings(warnings []Warning) {
	sort.Slice(warnings, func(i, j int) bool {
		return lessName(types.NamespacedName{Namespace: warnings[i].Namespace, Name: warnings[i].Name},
			types.NamespacedName{Namespace: warnings[j].Namespace, Name: warnings[j].Name})
	})
}

func (t *translator) backendStatus(tb *translatedBackend) *egressv1alpha1.BackendStatus {
	gen := tb.b.Generation
	st := &egressv1alpha1.BackendStatus{Destination: tb.dest.summary, Ports: portsSummary(tb.b), EffectiveTLS: tb.effective}
	accepted := condition(egressv1alpha1.ConditionAccepted, true, egressv1alpha1.ReasonAccepted, "Backend accepted"+tb.ignoredMsg+tunnelNote(tb), gen)
	if tb.problem != nil {
		accepted = condition(egressv1alpha1.ConditionAccepted, false, tb.problem.reason, tb.problem.msg, gen)
	}
	resolved := condition(egressv1alpha1.ConditionResolvedRefs, true, egressv1alpha1.ReasonResolvedRefs, "all references resolved", gen)
	if tb.refProblem != nil {
		resolved = condition(egressv1alpha1.ConditionResolvedRefs, false, tb.refProblem.reason, tb.refProblem.msg, gen)
	}
	st.Conditions = append(make([]metav1.Condition, 0, 4), accepted, resolved) // room for all four: no regrowth
	if tb.dest.hostname != "" {
		res, ok := t.addrs[tb.dest.hostname]
		st.Conditions = append(st.Conditions, addressesCondition(tb.dest.hostname, res, ok, gen))
		st.Addresses, st.BlockedAddresses = addressStatus(res)
	}
	st.Conditions = append(st.Conditions, programmedCondition(tb, gen))
	return st
}

func programmedCondition(tb *translatedBackend, gen int64) metav1.Condition {
	switch {
	case !tb.referenced && tb.portProblem != nil:
		return condition(egressv1alpha1.ConditionProgrammed, false, egressv1alpha1.ReasonInvalidPortRef,
			"nothing is programmed: every HTTPRoute backendRef to this Backend names a port it cannot serve, e.g. "+tb.portProblem.msg, gen)
	case !tb.referenced:
		return condition(egressv1alpha1.ConditionProgrammed, false, egressv1alpha1.ReasonNotReferenced, "no HTTPRoute attached to a Portcullis Gateway references this Backend", gen)
	case !tb.usable():
		return condition(egressv1alpha1.ConditionProgrammed, false, egressv1alpha1.ReasonPending, "not programmed while the Backend is not accepted or its references do not resolve; routes answer 500 for its share", gen)
	}
	return condition(egressv1alpha1.ConditionProgrammed, false, egressv1alpha1.ReasonPending, "waiting for Envoy to acknowledge the configuration", gen)
}

// addressesCondition reports what the DNS guard found for the destination's name.
func addressesCondition(name string, res egress.Resolution, known bool, gen int64) metav1.Condition {
	c := func(ok bool, reason, msg string) metav1.Condition {
		return condition(egressv1alpha1.ConditionAddressesResolved, ok, reason, msg, gen)
	}
	blocked := blockedSummary(res.Blocked)
	switch {
	case !known || res.State == egress.ResolutionPending:
		pending := c(false, egressv1alpha1.ReasonPendingResolution, "waiting for the DNS guard to resolve "+name)
		pending.Status = metav1.ConditionUnknown
		return pending
	case res.State == egress.ResolutionResolved:
		return c(true, egressv1alpha1.ReasonResolved, name+": "+strconv.Itoa(len(res.Vetted))+" vetted address(es)"+blocked)
	case res.State == egress.ResolutionAllForbidden:
		return c(false, egressv1alpha1.ReasonAllAddressesForbidden, fmt.Sprintf("%s: every answer was refused by the DNS guard%s; no endpoints, requests get 503", name, blocked))
	case res.State == egress.ResolutionNXDomain:
		return c(false, egressv1alpha1.ReasonNXDomain, name+" does not exist (NXDOMAIN)")
	case res.State == egress.ResolutionStale:
		return c(false, egressv1alpha1.ReasonStale, fmt.Sprintf("%s: resolution is failing (%s); the last vetted addresses are used until their grace period ends", name, res.Message))
	case res.State == egress.ResolutionForbiddenName:
		return c(false, egressv1alpha1.ReasonAllAddressesForbidden, fmt.Sprintf("%s: %s", name, res.Message))
	}
	return c(false, egressv1alpha1.ReasonResolutionFailed, fmt.Sprintf("%s could not be resolved: %s", name, res.Message))
}

func blockedSummary(blocked []egress.BlockedAddress) string {
	if len(blocked) == 0 {
		return ""
	}
	parts := make([]string, len(blocked))
	for i, b := range blocked {
		parts[i] = b.IP.String() + " (" + b.Reason + ")"
	}
	return "; blocked: " + strings.Join(parts, ", ")
}

func addressStatus(res egress.Resolution) ([]egressv1alpha1.VettedAddress, []egressv1alpha1.BlockedAddress) {
	var vetted []egressv1alpha1.VettedAddress
	if len(res.Vetted) > 0 {
		vetted = make([]egressv1alpha1.VettedAddress, 0, len(res.Vetted))
	}
	for _, v := range res.Vetted {
		a := egressv1alpha1.VettedAddress{IP: v.IP.String()}
		if !v.Since.IsZero() {
			a.Since = &metav1.Time{Time: v.Since}
		}
		vetted = append(vetted, a)
	}
	var blocked []egressv1alpha1.BlockedAddress
	if len(res.Blocked) > 0 {
		blocked = make([]egressv1alpha1.BlockedAddress, 0, len(res.Blocked))
	}
	for _, b := range res.Blocked {
		blocked = append(blocked, egressv1alpha1.BlockedAddress{IP: b.IP.String(), Reason: b.Reason})
	}
	return vetted, blocked
}

func portsSummary(b *egressv1alpha1.Backend) string {
	parts := make([]string, len(b.Spec.Destination.Ports))
	for i, p := range b.Spec.Destination.Ports {
		parts[i] = strconv.FormatInt(int64(p.Port), 10) + "/" + string(p.Protocol)
	}
	return strings.Join(parts, ",")
}
