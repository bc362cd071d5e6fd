package envoyconfig

import (
	"errors"
	"regexp"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// applyURLRewrite applies a rule's URLRewrite filter to the forwarded request.
func applyURLRewrite(a *routev3.RouteAction, rw *ir.URLRewrite, m *ir.RouteMatch) error {
	if rw == nil {
		return nil
	}
	if rw.Hostname != "" {
		a.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: rw.Hostname}
	}
	p, err := newPathRewrite(rw.FullPath, rw.PrefixPath, m)
	if err != nil {
		return err
	}
	p.applyToRoute(a)
	return nil
}

// pathRewrite is a Gateway API path modifier in Envoy's terms. At most one field is set;
// none means the path is kept.
type pathRewrite struct {
	fullPath *string
	prefix   string
	regex    *matcherv3.RegexMatchAndSubstitute
}

func newPathRewrite(full, prefix *string, m *ir.RouteMatch) (pathRewrite, error) {
	switch {
	case full != nil && prefix != nil:
		return pathRewrite{}, errors.New("both a full path and a prefix replacement")
	case full != nil:
		return pathRewrite{fullPath: full}, nil
	case prefix != nil:
		if m.PathType != ir.PathPrefix {
			return pathRewrite{}, errors.New("a prefix replacement needs a PathPrefix match")
		}
		return prefixReplacement(segmentPrefix(m.Path), strings.TrimRight(*prefix, "/")), nil
	}
	return pathRewrite{}, nil
}

// prefixReplacement replaces the matched prefix (whole segments, no trailing "/", "" for
// the root) by repl (no trailing "/"), following the Gateway API table: with "/foo"
// replaced by "/xyz", "/foo/bar" becomes "/xyz/bar"; replaced by "/", it becomes "/bar" and
// "/foo" becomes "/". Envoy's prefix_rewrite would give "//bar" in that last case, so the
// matched prefix and the slashes after it are cut by a regex instead.
func prefixReplacement(matched, repl string) pathRewrite {
	switch {
	case repl == "" && matched == "":
		return pathRewrite{}
	case repl == "":
		return pathRewrite{regex: &matcherv3.RegexMatchAndSubstitute{
			Pattern:      &matcherv3.RegexMatcher{Regex: "^" + regexp.QuoteMeta(matched) + "/*"},
			Substitution: "/",
		}}
	case matched == "":
		// The matched "/" is the path's first character: keep it as the separator.
		return pathRewrite{prefix: repl + "/"}
	default:
		return pathRewrite{prefix: repl}
	}
}

// applyToRoute sets the rewrite on a forwarding action. A full path replacement is a
// regex over the whole path: Envoy has no literal "replace path" for forwarding, and its
// path rewrites leave the query string alone.
func (p pathRewrite) applyToRoute(a *routev3.RouteAction) {
	switch {
	case p.fullPath != nil:
		a.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{
			Pattern:      &matcherv3.RegexMatcher{Regex: "^/.*$"},
			Substitution: literalSubstitution(*p.fullPath),
		}
	case p.regex != nil:
		a.RegexRewrite = p.regex
	case p.prefix != "":
		a.PrefixRewrite = p.prefix
	}
}

// applyToRedirect sets the same rewrite on the location of a redirect.
func (p pathRewrite) applyToRedirect(a *routev3.RedirectAction) {
	switch {
	case p.fullPath != nil:
		a.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: *p.fullPath}
	case p.regex != nil:
		a.PathRewriteSpecifier = &routev3.RedirectAction_RegexRewrite{RegexRewrite: p.regex}
	case p.prefix != "":
		a.PathRewriteSpecifier = &routev3.RedirectAction_PrefixRewrite{PrefixRewrite: p.prefix}
	}
}

// literalSubstitution escapes backslashes, which RE2 substitutions read as group references.
func literalSubstitution(s string) string { return strings.ReplaceAll(s, `\`, `\\`) }
