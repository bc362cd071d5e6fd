package translate

import (
	"fmt"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// mirrors resolves a rule's RequestMirror filters. A mirror's backendRef follows the
// rules of any backendRef (kind, ReferenceGrant, the Backend's or Service's own
// checks); one that does not resolve is reported in ResolvedRefs and left out, and the
// rule still serves. A bad share refuses the route, naming the field.
func (t *translator) mirrors(g *gatewayContext, r *gwapiv1.HTTPRoute, ruleIdx int, filters []gwapiv1.HTTPRouteFilter, st *refStatus) ([]ir.Mirror, error) {
	var out []ir.Mirror
	for j, f := range filters {
		if f.Type != gwapiv1.HTTPRouteFilterRequestMirror || f.RequestMirror == nil {
			continue
		}
		field := fmt.Sprintf("rules[%d].filters[%d].requestMirror", ruleIdx, j)
		num, den, err := mirrorShare(f.RequestMirror)
		if err != nil {
			return nil, fmt.Errorf("%s.%v", field, err)
		}
		wc, rerr := t.resolveBackendRef(g, r.Namespace, f.RequestMirror.BackendRef)
		if rerr != nil {
			st.fail(rerr.reason, field+".backendRef: "+rerr.msg)
			continue
		}
		if num > 0 {
			out = append(out, ir.Mirror{Cluster: wc.Cluster, Numerator: num, Denominator: den})
		}
	}
	return out, nil
}

// mirrorShare is the share of requests mirrored: percent (of 100), a fraction
// (denominator 100 when unset) or, with neither, all of them.
func mirrorShare(m *gwapiv1.HTTPRequestMirrorFilter) (uint32, uint32, error) {
	switch {
	case m.Percent != nil && m.Fraction != nil:
		return 0, 0, fmt.Errorf("percent and fraction: set one")
	case m.Percent != nil:
		if *m.Percent < 0 || *m.Percent > 100 {
			return 0, 0, fmt.Errorf("percent %d: want 0 to 100", *m.Percent)
		}
		return uint32(*m.Percent), 100, nil
	case m.Fraction != nil:
		den := int32(100)
		if m.Fraction.Denominator != nil {
			den = *m.Fraction.Denominator
		}
		if den < 1 || m.Fraction.Numerator < 0 || m.Fraction.Numerator > den {
			return 0, 0, fmt.Errorf("fraction %d/%d: want 0 <= numerator <= denominator, denominator at least 1", m.Fraction.Numerator, den)
		}
		return uint32(m.Fraction.Numerator), uint32(den), nil
	}
	return 1, 1, nil
}
