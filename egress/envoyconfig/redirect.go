package envoyconfig

import (
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// redirectCodes are the redirect statuses Gateway API allows and Envoy can send.
var redirectCodes = map[int]routev3.RedirectAction_RedirectResponseCode{
	301: routev3.RedirectAction_MOVED_PERMANENTLY,
	302: routev3.RedirectAction_FOUND,
	303: routev3.RedirectAction_SEE_OTHER,
	307: routev3.RedirectAction_TEMPORARY_REDIRECT,
	308: routev3.RedirectAction_PERMANENT_REDIRECT,
}

// redirectRoute answers with a redirect; unset parts of the location keep the request's.
// listenerScheme is the scheme of the listener, used when the redirect keeps the scheme.
func redirectRoute(rd *ir.Redirect, m *ir.RouteMatch, listenerScheme string) (*routev3.Route, error) {
	code, ok := redirectCodes[rd.StatusCode]
	if !ok {
		return nil, fmt.Errorf("redirect status %d is not one of 301, 302, 303, 307, 308", rd.StatusCode)
	}
	a := &routev3.RedirectAction{ResponseCode: code, HostRedirect: rd.Hostname, PortRedirect: redirectPort(rd, listenerScheme)}
	if rd.Scheme != "" {
		a.SchemeRewriteSpecifier = &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: rd.Scheme}
	}
	rw, err := newPathRewrite(rd.FullPath, rd.PrefixPath, m)
	if err != nil {
		return nil, fmt.Errorf("redirect: %w", err)
	}
	rw.applyToRedirect(a)
	return &routev3.Route{Action: &routev3.Route_Redirect{Redirect: a}}, nil
}

// redirectPort is the port to put in the Location, or 0 to put none. Envoy writes an
// explicit port_redirect even when it is the scheme's default ("http://h:80/"), which
// Gateway API says not to do, so the default port of the resulting scheme is left out.
// With no port, the Location keeps the port the client's Host named, if any (Host
// ports are not stripped: Gateway API wants them to reach the upstream).
func redirectPort(rd *ir.Redirect, listenerScheme string) uint32 {
	scheme := rd.Scheme
	if scheme == "" {
		scheme = listenerScheme
	}
	if (strings.EqualFold(scheme, "http") && rd.Port == 80) || (strings.EqualFold(scheme, "https") && rd.Port == 443) {
		return 0
	}
	return rd.Port
}

// directResponseRoute answers without any upstream.
func directResponseRoute(d *ir.DirectResponse) (*routev3.Route, error) {
	if d.StatusCode < 200 || d.StatusCode > 599 {
		return nil, fmt.Errorf("direct response status %d is out of range 200-599", d.StatusCode)
	}
	a := &routev3.DirectResponseAction{Status: uint32(d.StatusCode)}
	if d.Body != "" {
		a.Body = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: d.Body}}
	}
	return &routev3.Route{Action: &routev3.Route_DirectResponse{DirectResponse: a}}, nil
}
