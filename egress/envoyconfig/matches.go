package envoyconfig

import (
	"fmt"
	"regexp"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// routeMatch is the conjunction of the path, header, query and method conditions.
func routeMatch(m *ir.RouteMatch) (*routev3.RouteMatch, error) {
	out := &routev3.RouteMatch{}
	if err := setPathMatch(out, m); err != nil {
		return nil, err
	}
	for _, h := range m.Headers {
		sm, err := stringMatcher(h)
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", h.Name, err)
		}
		out.Headers = append(out.Headers, headerMatcher(h.Name, sm))
	}
	for _, q := range m.QueryParams {
		sm, err := stringMatcher(q)
		if err != nil {
			return nil, fmt.Errorf("query parameter %q: %w", q.Name, err)
		}
		out.QueryParameters = append(out.QueryParameters, &routev3.QueryParameterMatcher{
			Name:                         q.Name,
			QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: sm},
		})
	}
	if m.Method != "" {
		// HTTP/2 and HTTP/1 alike expose the method as the :method pseudo-header.
		out.Headers = append(out.Headers, headerMatcher(":method", exactMatcher(m.Method)))
	}
	return out, nil
}

func setPathMatch(out *routev3.RouteMatch, m *ir.RouteMatch) error {
	switch m.PathType {
	case ir.PathExact:
		out.PathSpecifier = &routev3.RouteMatch_Path{Path: m.Path}
	case ir.PathPrefix:
		setPrefixMatch(out, m.Path)
	case ir.PathRegex:
		re, err := regexMatcher(m.Path)
		if err != nil {
			return err
		}
		out.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: re}
	default:
		return fmt.Errorf("unknown path match type %q", m.PathType)
	}
	return nil
}

// setPrefixMatch matches whole path segments, as Gateway API requires: "/api" matches "/api"
// and "/api/v1" but not "/apis". Envoy's path_separated_prefix does exactly that but
// refuses a trailing "/", which Gateway API ignores anyway, so it is trimmed. "/" matches
// every path and stays a plain prefix.
func setPrefixMatch(out *routev3.RouteMatch, path string) {
	p := segmentPrefix(path)
	if p == "" {
		out.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: "/"}
		return
	}
	out.PathSpecifier = &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: p}
}

// segmentPrefix is a path prefix without trailing slashes: "" for the root.
func segmentPrefix(path string) string { return strings.TrimRight(path, "/") }

func headerMatcher(name string, sm *matcherv3.StringMatcher) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{
		Name:                 name,
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: sm},
	}
}

func stringMatcher(v ir.ValueMatch) (*matcherv3.StringMatcher, error) {
	switch v.Type {
	case ir.MatchExact:
		return exactMatcher(v.Value), nil
	case ir.MatchRegex:
		re, err := regexMatcher(v.Value)
		if err != nil {
			return nil, err
		}
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: re}}, nil
	default:
		return nil, fmt.Errorf("unknown match type %q", v.Type)
	}
}

func exactMatcher(s string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}}
}

// regexMatcher is an RE2 matcher (Envoy's only safe engine). The translator refuses, on
// the route, every pattern Envoy would reject (syntax, escapes, program size: see
// translate's checkRegex); this syntax check is only a last guard for IR built elsewhere.
func regexMatcher(pattern string) (*matcherv3.RegexMatcher, error) {
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, fmt.Errorf("invalid RE2 pattern %q: %w", pattern, err)
	}
	return &matcherv3.RegexMatcher{Regex: pattern}, nil
}
