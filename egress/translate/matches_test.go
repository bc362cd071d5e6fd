package translate

import (
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestCheckMatches(t *testing.T) {
	regex, prefix := gwapiv1.PathMatchRegularExpression, gwapiv1.PathMatchPathPrefix
	headerRegex, queryRegex := gwapiv1.HeaderMatchRegularExpression, gwapiv1.QueryParamMatchRegularExpression
	path := func(t *gwapiv1.PathMatchType, v string) *gwapiv1.HTTPPathMatch {
		return &gwapiv1.HTTPPathMatch{Type: t, Value: &v}
	}
	cases := []struct {
		name    string
		matches []gwapiv1.HTTPRouteMatch
		wantErr string
	}{
		{"no matches", nil, ""},
		{"ordinary matches", []gwapiv1.HTTPRouteMatch{{Path: path(&regex, `/v[0-9]+/.*`),
			Headers:     []gwapiv1.HTTPHeaderMatch{{Name: "x-team", Value: "blue"}, {Type: &headerRegex, Name: "x-id", Value: "[0-9]+"}},
			QueryParams: []gwapiv1.HTTPQueryParamMatch{{Type: &queryRegex, Name: "page", Value: "[0-9]{1,3}"}}}}, ""},
		{"an unclosed path regex", []gwapiv1.HTTPRouteMatch{{}, {Path: path(&regex, "/(unclosed")}}, "matches[1].path.value: invalid regular expression"},
		{"a path regex too large", []gwapiv1.HTTPRouteMatch{{Path: path(&regex, "/[a-z]{1,1000}x")}}, "matches[0].path.value: the regular expression is too large"},
		{"a prefix with a query", []gwapiv1.HTTPRouteMatch{{Path: path(&prefix, "/a?b")}}, `matches[0].path.value: the path prefix "/a?b"`},
		{"a default-type prefix with a fragment", []gwapiv1.HTTPRouteMatch{{Path: path(nil, "/a#b")}}, "matches[0].path.value"},
		{"a header name with a space", []gwapiv1.HTTPRouteMatch{{Headers: []gwapiv1.HTTPHeaderMatch{{Name: "x ok", Value: "v"}}}}, `matches[0].headers[0].name: "x ok"`},
		{"a header regex too large", []gwapiv1.HTTPRouteMatch{{Headers: []gwapiv1.HTTPHeaderMatch{{Name: "a", Value: "b"}, {Type: &headerRegex, Name: "x", Value: ".{1,500}"}}}}, "matches[0].headers[1].value: the regular expression is too large"},
		{"a query regex Envoy's RE2 refuses", []gwapiv1.HTTPRouteMatch{{QueryParams: []gwapiv1.HTTPQueryParamMatch{{Type: &queryRegex, Name: "q", Value: `\x{100}`}}}}, "matches[0].queryParams[0].value: invalid regular expression for Envoy's RE2"},
		{"a prefix without a leading slash", []gwapiv1.HTTPRouteMatch{{Path: path(&prefix, "\t")}}, `matches[0].path.value: the path "\t" does not start with "/"`},
		{"a path type the CRD's enum would refuse", []gwapiv1.HTTPRouteMatch{{Path: path(ptrTo(gwapiv1.PathMatchType("Glob")), "/a")}}, `matches[0].path.type: "Glob" is not Exact`},
		{"an empty query name", []gwapiv1.HTTPRouteMatch{{QueryParams: []gwapiv1.HTTPQueryParamMatch{{Name: "", Value: "v"}}}}, "matches[0].queryParams[0].name"},
		{"an exact header value is not a regex", []gwapiv1.HTTPRouteMatch{{Headers: []gwapiv1.HTTPHeaderMatch{{Name: "x", Value: "(unclosed"}}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertRefusal(t, checkMatches(tc.matches), tc.wantErr)
		})
	}
}
