package translate

import (
	"fmt"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// applyFilters sets a rule's filters on the IR route. It returns an error naming the
// first filter Portcullis does not implement.
func applyFilters(r *ir.Route, filters []gwapiv1.HTTPRouteFilter) error {
	for i, f := range filters {
		switch f.Type {
		case gwapiv1.HTTPRouteFilterRequestHeaderModifier:
			r.RequestHeaders = headerMutation(f.RequestHeaderModifier)
			if err := checkHeaderMutation(r.RequestHeaders); err != nil {
				return fmt.Errorf("filters[%d].requestHeaderModifier.%v", i, err)
			}
		case gwapiv1.HTTPRouteFilterResponseHeaderModifier:
			r.ResponseHeaders = headerMutation(f.ResponseHeaderModifier)
			if err := checkHeaderMutation(r.ResponseHeaders); err != nil {
				return fmt.Errorf("filters[%d].responseHeaderModifier.%v", i, err)
			}
		case gwapiv1.HTTPRouteFilterRequestRedirect:
			r.Redirect = redirect(f.RequestRedirect)
		case gwapiv1.HTTPRouteFilterURLRewrite:
			r.Rewrite = rewrite(f.URLRewrite)
		case gwapiv1.HTTPRouteFilterRequestMirror:
			// Resolved with the backendRefs (mirror.go): it names a backend too.
		default:
			return fmt.Errorf("filters[%d]: type %s is not supported; supported: RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite, RequestMirror", i, f.Type)
		}
	}
	return nil
}

func headerMutation(f *gwapiv1.HTTPHeaderFilter) *ir.HeaderMutation {
	if f == nil {
		return nil
	}
	m := &ir.HeaderMutation{Remove: f.Remove}
	for _, h := range f.Set {
		m.Set = append(m.Set, ir.Header{Name: strings.ToLower(string(h.Name)), Value: h.Value})
	}
	for _, h := range f.Add {
		m.Add = append(m.Add, ir.Header{Name: strings.ToLower(string(h.Name)), Value: h.Value})
	}
	return m
}

func redirect(f *gwapiv1.HTTPRequestRedirectFilter) *ir.Redirect {
	if f == nil {
		return nil
	}
	r := &ir.Redirect{StatusCode: 302}
	if f.StatusCode != nil {
		r.StatusCode = *f.StatusCode
	}
	if f.Scheme != nil {
		r.Scheme = *f.Scheme
	}
	if f.Hostname != nil {
		r.Hostname = string(*f.Hostname)
	}
	if f.Port != nil {
		r.Port = uint32(*f.Port)
	}
	r.FullPath, r.PrefixPath = pathModifier(f.Path)
	return r
}

func rewrite(f *gwapiv1.HTTPURLRewriteFilter) *ir.URLRewrite {
	if f == nil {
		return nil
	}
	r := &ir.URLRewrite{}
	if f.Hostname != nil {
		r.Hostname = string(*f.Hostname)
	}
	r.FullPath, r.PrefixPath = pathModifier(f.Path)
	return r
}

func pathModifier(p *gwapiv1.HTTPPathModifier) (full, prefix *string) {
	if p == nil {
		return nil, nil
	}
	switch p.Type {
	case gwapiv1.FullPathHTTPPathModifier:
		return p.ReplaceFullPath, nil
	case gwapiv1.PrefixMatchHTTPPathModifier:
		return nil, p.ReplacePrefixMatch
	}
	return nil, nil
}
