package translate

import (
	"sort"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// convertMatch turns an HTTPRouteMatch into the IR; an absent path means prefix "/".
func convertMatch(m gwapiv1.HTTPRouteMatch) ir.RouteMatch {
	out := ir.RouteMatch{PathType: ir.PathPrefix, Path: "/"}
	if m.Path != nil {
		if m.Path.Type != nil {
			out.PathType = ir.PathMatchType(*m.Path.Type)
		}
		if m.Path.Value != nil {
			out.Path = *m.Path.Value
		}
	}
	for _, h := range m.Headers {
		out.Headers = append(out.Headers, ir.ValueMatch{Name: strings.ToLower(string(h.Name)), Type: stringMatchType(h.Type), Value: h.Value})
	}
	for _, q := range m.QueryParams {
		out.QueryParams = append(out.QueryParams, ir.ValueMatch{Name: string(q.Name), Type: stringMatchType(q.Type), Value: q.Value})
	}
	if m.Method != nil {
		out.Method = string(*m.Method)
	}
	return out
}

func stringMatchType[T ~string](t *T) ir.StringMatchType {
	if t != nil && string(*t) == string(gwapiv1.HeaderMatchRegularExpression) {
		return ir.MatchRegex
	}
	return ir.MatchExact
}

// routeEntry is one IR route with what ordering needs to know about where it came from.
type routeEntry struct {
	route       *gwapiv1.HTTPRoute
	rule, match int
	ir          ir.Route
}

// sortByPrecedence orders routes as Gateway API requires: exact paths first, then regular
// expressions (longest first), then the longest prefix; then a method match; then more
// header matches; then more query matches; then the oldest route; then namespace/name;
// then rule and match order.
func sortByPrecedence(entries []routeEntry) {
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if ka, kb := pathRank(a.ir.Match), pathRank(b.ir.Match); ka != kb {
			return ka > kb
		}
		if la, lb := len(a.ir.Match.Path), len(b.ir.Match.Path); la != lb {
			return la > lb
		}
		if ma, mb := a.ir.Match.Method != "", b.ir.Match.Method != ""; ma != mb {
			return ma
		}
		if ha, hb := len(a.ir.Match.Headers), len(b.ir.Match.Headers); ha != hb {
			return ha > hb
		}
		if qa, qb := len(a.ir.Match.QueryParams), len(b.ir.Match.QueryParams); qa != qb {
			return qa > qb
		}
		if ta, tb := a.route.CreationTimestamp, b.route.CreationTimestamp; !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		if na, nb := nameOf(a.route), nameOf(b.route); na != nb {
			return lessName(na, nb)
		}
		if a.rule != b.rule {
			return a.rule < b.rule
		}
		return a.match < b.match
	})
}

func pathRank(m ir.RouteMatch) int {
	switch m.PathType {
	case ir.PathExact:
		return 2
	case ir.PathRegex:
		return 1
	}
	return 0
}
