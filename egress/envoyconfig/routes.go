package envoyconfig

import (
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// routeConfiguration is the route table of one listener, named after it.
func (b *builder) routeConfiguration(l *ir.Listener) (*routev3.RouteConfiguration, error) {
	t, err := b.routeTable(l, nil, 0)
	return t.out, err
}

// checkUniqueDomains rejects a domain served by two virtual hosts of one listener, which
// Envoy refuses as a whole route table.
func checkUniqueDomains(l *ir.Listener) error {
	owner := make(map[string]string, len(l.VirtualHosts)) // most hosts have one domain: grown, the map was twice the garbage
	for _, vh := range l.VirtualHosts {
		for _, d := range vh.Domains {
			if prev, dup := owner[d]; dup {
				return fmt.Errorf("listener %q: domain %q is in virtual hosts %q and %q", l.Name, d, prev, vh.Name)
			}
			owner[d] = vh.Name
		}
	}
	return nil
}

// listenerRoutes builds the routes of one listener. Redirects need the scheme clients
// used to reach it.
type listenerRoutes struct {
	*builder
	scheme string
}

// virtualHost keeps the IR's route order: it is the Gateway API match precedence.
func (b listenerRoutes) virtualHost(vh *ir.VirtualHost) (*routev3.VirtualHost, error) {
	routes, err := buildEach(vh.Routes, b.route)
	if err != nil {
		return nil, fmt.Errorf("virtual host %q: %w", vh.Name, err)
	}
	tunnels, err := b.tunnelRoutes(vh)
	if err != nil {
		return nil, err
	}
	return &routev3.VirtualHost{Name: vh.Name, Domains: vh.Domains, Routes: append(tunnels, routes...)}, nil
}

// route is one rule match: its condition, header filters and one outcome.
func (b listenerRoutes) route(r *ir.Route) (*routev3.Route, error) {
	out, err := b.routeOutcome(r)
	if err != nil {
		return nil, fmt.Errorf("route %q: %w", r.Name, err)
	}
	if out.Match, err = routeMatch(&r.Match); err != nil {
		return nil, fmt.Errorf("route %q: %w", r.Name, err)
	}
	out.Name = r.Name
	if out.Metadata, err = auditMetadata(ir.HTTPRouteOf(r.Name), DecisionAllowed); err != nil {
		return nil, fmt.Errorf("route %q: %w", r.Name, err)
	}
	if err := setRequestHeaders(out, r.RequestHeaders); err != nil {
		return nil, fmt.Errorf("route %q: %w", r.Name, err)
	}
	if err := setResponseHeaders(out, r.ResponseHeaders); err != nil {
		return nil, fmt.Errorf("route %q: %w", r.Name, err)
	}
	return out, nil
}

// routeOutcome is the route with its action set: exactly one of redirect, direct
// response and forwarding, as the IR promises.
func (b listenerRoutes) routeOutcome(r *ir.Route) (*routev3.Route, error) {
	forwards := len(r.Backends) > 0 || r.InvalidWeight > 0
	if n := count(r.Redirect != nil, r.DirectResponse != nil, forwards); n != 1 {
		return nil, fmt.Errorf("want exactly one of redirect, direct response and backends, have %d", n)
	}
	switch {
	case r.Redirect != nil:
		return redirectRoute(r.Redirect, &r.Match, b.scheme)
	case r.DirectResponse != nil:
		return directResponseRoute(r.DirectResponse)
	case totalWeight(r) == 0:
		// Gateway API: backendRefs that all weigh 0 receive no traffic; the request fails.
		return directResponseRoute(&ir.DirectResponse{StatusCode: 500, Body: ir.BackendUnavailable + ": every backendRef has weight 0\n"})
	default:
		return b.forwardRoute(r)
	}
}

func count(conds ...bool) int {
	n := 0
	for _, c := range conds {
		if c {
			n++
		}
	}
	return n
}
