package envoyconfig

import (
	"fmt"
	"strconv"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// Forward-proxy listeners: HTTP CONNECT termination. An HTTP/1.1 CONNECT has no path, so
// only routes with a connect_matcher match it. Envoy picks the virtual host by the
// authority's host (route tables ignore the port in host matching), so a tunnel is a
// CONNECT route in the virtual host of its exact domain that also requires the
// authority to end in ":<port>"; every virtual host of a proxy table ends with a CONNECT
// route answering 403, so a CONNECT that no tunnel allows is refused with the decision
// as its body, like any other denial, and logged. The tunnel's cluster is raw TCP to
// the vetted addresses: the client's TLS goes through untouched.
const (
	connectUpgrade = "CONNECT"
	authorityName  = ":authority"
)

// Decisions of CONNECT requests in the audit log.
const (
	DecisionTunnel    = "allowed: tunnel"
	DecisionNoTunnel  = "denied: no backend allows this tunnel"
	DecisionNoAddress = "denied: no vetted address"
)

// tunnelCloseDelay is how long a proxy listener waits, once it has closed a connection's
// stream (the tunnel's destination closed it), for the client to close first before it
// closes the socket itself. Envoy's default, 1 s, is meant for clients that might miss
// an error response: a tunnel has none, and its client reads until end of file, so it
// saw every tunnel that its destination closed end a second late (the forward-proxy
// benchmark measured that second, not throughput). 100 ms still lets a client that is
// sending read what it was sent before the socket closes.
const tunnelCloseDelay = 100 * time.Millisecond

// allowConnect lets a proxy listener's connection manager accept CONNECT. Its routes
// decide which authorities may be tunnelled to. (No listener strips the Host's port,
// so a CONNECT to the listener's own port keeps it too.)
func allowConnect(hcm *hcmv3.HttpConnectionManager) {
	hcm.UpgradeConfigs = append(hcm.UpgradeConfigs, &hcmv3.HttpConnectionManager_UpgradeConfig{UpgradeType: connectUpgrade})
	hcm.DelayedCloseTimeout = durationpb.New(tunnelCloseDelay)
}

// tunnelRoutes are a virtual host's CONNECT routes, one per tunnel, in port order. A
// tunnel's cluster must exist and speak TCP.
func (b *builder) tunnelRoutes(vh *ir.VirtualHost) ([]*routev3.Route, error) {
	out := make([]*routev3.Route, 0, len(vh.Tunnels))
	for _, tn := range vh.Tunnels {
		if c, ok := b.clusterNamed(tn.Cluster); !tn.NoAddress && (!ok || c.Protocol != ir.ProtocolTCP) {
			return nil, fmt.Errorf("virtual host %q: tunnel to port %d: cluster %q is not a defined TCP cluster", vh.Name, tn.Port, tn.Cluster)
		}
		r, err := tunnelRoute(vh.Domains[0], tn)
		if err != nil {
			return nil, fmt.Errorf("virtual host %q: tunnel to port %d: %w", vh.Name, tn.Port, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// tunnelRoute opens the tunnel of one authority, or refuses it when the DNS guard
// vetted no address for its name.
func tunnelRoute(domain string, tn ir.Tunnel) (*routev3.Route, error) {
	port := strconv.FormatUint(uint64(tn.Port), 10)
	match := connectMatch()
	match.Headers = []*routev3.HeaderMatcher{{
		Name: authorityName,
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: ":" + port},
		}},
	}}
	if tn.NoAddress {
		r, err := connectDenyRoute(DecisionNoAddress)
		if err != nil {
			return nil, err
		}
		r.Name, r.Match = "portcullis/connect/"+domain+":"+port+"/no-address", match
		return r, nil
	}
	meta, err := auditMetadata("", DecisionTunnel)
	if err != nil {
		return nil, err
	}
	return &routev3.Route{
		Name:     "portcullis/connect/" + domain + ":" + port,
		Match:    match,
		Metadata: meta,
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: tn.Cluster},
			UpgradeConfigs: []*routev3.RouteAction_UpgradeConfig{{
				UpgradeType:   connectUpgrade,
				ConnectConfig: &routev3.RouteAction_UpgradeConfig_ConnectConfig{},
			}},
			// A tunnel lasts as long as the client keeps it; the connection manager's
			// idle timeout still closes a silent one.
			Timeout: durationpb.New(0),
		}},
	}, nil
}

func connectMatch() *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_ConnectMatcher_{ConnectMatcher: &routev3.RouteMatch_ConnectMatcher{}}}
}

// connectDenyRoute answers a CONNECT with 403 and the decision as a one-line body.
func connectDenyRoute(decision string) (*routev3.Route, error) {
	r, err := denyRoute(deniedStatus, decision)
	if err != nil {
		return nil, err
	}
	r.Name += "/connect"
	r.Match = connectMatch()
	return r, nil
}

// withConnectDenial appends to every virtual host of a proxy table the CONNECT route
// that refuses what its tunnels do not allow.
func withConnectDenial(vhosts []*routev3.VirtualHost, decision string) error {
	r, err := connectDenyRoute(decision)
	if err != nil {
		return err
	}
	for _, vh := range vhosts {
		vh.Routes = append(vh.Routes, r) // shared, as a table's tail routes are (tailRoutes)
	}
	return nil
}
