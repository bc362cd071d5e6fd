package translate

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// checkMatches refuses match values Envoy would reject, which would hold back the route
// table of every tenant of the Gateway: a regular expression RE2 refuses or that compiles
// too large (checkRegex), a header name that is not a token, a query parameter name
// Envoy cannot hold, and a path prefix with "?" or "#" (Envoy's path_separated_prefix
// refuses them). The error names the field, relative to the rule.
func checkMatches(matches []gwapiv1.HTTPRouteMatch) error {
	for j, m := range matches {
		if err := checkMatch(m); err != nil {
			return fmt.Errorf("matches[%d].%v", j, err)
		}
	}
	return nil
}

func checkMatch(m gwapiv1.HTTPRouteMatch) error {
	if p := m.Path; p != nil && p.Type != nil && !knownPathType(*p.Type) {
		return fmt.Errorf("path.type: %q is not Exact, PathPrefix or RegularExpression", *p.Type)
	}
	if p := m.Path; p != nil && p.Value != nil {
		if err := checkPathMatch(p.Type, *p.Value); err != nil {
			return fmt.Errorf("path.value: %v", err)
		}
	}
	for k, h := range m.Headers {
		if err := checkHeaderName(string(h.Name)); err != nil {
			return fmt.Errorf("headers[%d].name: %v", k, err)
		}
		if err := checkValueMatch(h.Type, h.Value); err != nil {
			return fmt.Errorf("headers[%d].value: %v", k, err)
		}
	}
	for k, q := range m.QueryParams {
		if q.Name == "" || len(q.Name) > maxQueryParamNameBytes {
			return fmt.Errorf("queryParams[%d].name: must be 1 to %d bytes long", k, maxQueryParamNameBytes)
		}
		if err := checkValueMatch(q.Type, q.Value); err != nil {
			return fmt.Errorf("queryParams[%d].value: %v", k, err)
		}
	}
	return nil
}

// maxQueryParamNameBytes is the longest query parameter name Envoy's
// QueryParameterMatcher holds.
const maxQueryParamNameBytes = 1024

// knownPathType: the CRD's enum admits no other, but a route that got past it (an old or
// edited CRD) must not fail the whole Gateway's build.
func knownPathType(t gwapiv1.PathMatchType) bool {
	return t == gwapiv1.PathMatchExact || t == gwapiv1.PathMatchPathPrefix || t == gwapiv1.PathMatchRegularExpression
}

func checkPathMatch(t *gwapiv1.PathMatchType, value string) error {
	switch {
	case t != nil && *t == gwapiv1.PathMatchRegularExpression:
		return checkRegex(value)
	case (t == nil || *t != gwapiv1.PathMatchRegularExpression) && !strings.HasPrefix(value, "/"):
		// The CRD requires it; Envoy's path_separated_prefix refuses a one-byte prefix.
		return fmt.Errorf("the path %q does not start with \"/\"", value)
	case (t == nil || *t == gwapiv1.PathMatchPathPrefix) && strings.ContainsAny(value, "?#"):
		return fmt.Errorf("the path prefix %q contains \"?\" or \"#\"", value)
	}
	return nil
}

func checkValueMatch[T ~string](t *T, value string) error {
	if stringMatchType(t) == ir.MatchRegex {
		return checkRegex(value)
	}
	return nil
}

func stringMatchType[T ~string](t *T) ir.StringMatchType {
	if t != nil && string(*t) == string(gwapiv1.HeaderMatchRegularExpression) {
		return ir.MatchRegex
	}
	return ir.MatchExact
}

// routeEntry is one IR route with what ordering needs to know about where it came from.
type routeEntry struct {
	route       routeOrigin
	rule, match int
	ir          ir.Route
}

// routeOrigin is what ordering and tenancy read of the HTTPRoute an entry came from: its
// name and creation time, copied. Route sides keep their entries from one translation to
// the next (route_side.go), and a pointer to the route itself kept alive the whole
// gathered list it sat in: at 10,000 routes, every HTTPRoute list the manager had
// gathered while they were created (96 lists, some 170 MB of a 400 MB heap).
type routeOrigin struct {
	name    types.NamespacedName
	created metav1.Time
}

func originOf(r *gwapiv1.HTTPRoute) routeOrigin {
	return routeOrigin{name: nameOf(r), created: r.CreationTimestamp}
}

// sortByPrecedence orders routes as Gateway API requires: exact paths first, then regular
// expressions (longest first), then the longest prefix; then a method match; then more
// header matches; then more query matches; then the oldest route; then namespace/name;
// then rule and match order.
func sortByPrecedence(entries []*routeEntry) {
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
		if ta, tb := a.route.created, b.route.created; !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		if na, nb := a.route.name, b.route.name; na != nb {
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
