package envoyconfig

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// What a request that no route serves gets: 403 on an isolated listener (the caller
// may not go there, whether or not another tenant may), 404 otherwise (Gateway API's
// answer when nothing matches). The body is the decision, so whoever sees it knows why
// without reading Envoy's logs; it names no route and no other tenant.
const (
	deniedStatus  = 403
	noRouteStatus = 404
)

// catchAllHost is the virtual host that answers for every Host no other one serves.
const catchAllHost = "*"

// denyTable is an inline route configuration that answers every request with 403 and
// the decision, identifying its callers for the audit log; on a forward proxy, every
// CONNECT too.
func denyTable(name, decision string, callers []ir.Caller, proxy bool) (*routev3.RouteConfiguration, error) {
	r, err := denyRoute(deniedStatus, decision)
	if err != nil {
		return nil, err
	}
	rc := &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{Name: "deny", Domains: []string{catchAllHost}, Routes: []*routev3.Route{r}}}}
	if proxy {
		if err := withConnectDenial(rc.VirtualHosts, decision); err != nil {
			return nil, err
		}
	}
	if rc.TypedPerFilterConfig, err = identityConfig(callers); err != nil {
		return nil, err
	}
	return rc, nil
}

// denyRoute answers every path with status and the decision as a one-line body.
func denyRoute(status int, decision string) (*routev3.Route, error) {
	meta, err := auditMetadata("", decision)
	if err != nil {
		return nil, err
	}
	return &routev3.Route{
		Name:     "portcullis/" + strings.ReplaceAll(strings.ReplaceAll(decision, ": ", "/"), " ", "-"),
		Match:    &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Metadata: meta,
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
			Status: uint32(status),
			Body:   &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: decision + "\n"}},
		}},
	}, nil
}

// auditMetadata is what a route tells the audit log: the HTTPRoute ("namespace/name",
// empty for Portcullis' own routes) and the decision.
func auditMetadata(route, decision string) (*corev3.Metadata, error) {
	fields := map[string]any{metaDecision: decision}
	if route != "" {
		fields[metaRoute] = route
	}
	s, err := structpb.NewStruct(fields)
	if err != nil {
		return nil, err
	}
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{MetadataNamespace: s}}, nil
}
