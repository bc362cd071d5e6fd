package envoyconfig

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// applyMirrors copies the route's requests to its mirrors. Envoy sends the copy without
// waiting for it and drops its answer; a share below all is a runtime fraction with a
// fixed default (no runtime key is ever set).
func applyMirrors(a *routev3.RouteAction, mirrors []ir.Mirror) {
	for _, m := range mirrors {
		p := &routev3.RouteAction_RequestMirrorPolicy{Cluster: m.Cluster}
		if m.Numerator < m.Denominator {
			p.RuntimeFraction = &corev3.RuntimeFractionalPercent{DefaultValue: fraction(m.Numerator, m.Denominator)}
		}
		a.RequestMirrorPolicies = append(a.RequestMirrorPolicies, p)
	}
}

// fraction is numerator/denominator as Envoy's FractionalPercent, on the smallest of
// its denominators that holds it exactly (a million always does for Gateway API's
// percent and its fractions with a denominator dividing a million; others round down).
func fraction(numerator, denominator uint32) *typev3.FractionalPercent {
	switch {
	case denominator == 100:
		return &typev3.FractionalPercent{Numerator: numerator, Denominator: typev3.FractionalPercent_HUNDRED}
	case denominator == 10000:
		return &typev3.FractionalPercent{Numerator: numerator, Denominator: typev3.FractionalPercent_TEN_THOUSAND}
	}
	return &typev3.FractionalPercent{Numerator: uint32(uint64(numerator) * 1_000_000 / uint64(denominator)), Denominator: typev3.FractionalPercent_MILLION}
}
