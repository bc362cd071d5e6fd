package envoyconfig

import (
	"fmt"
	"net/netip"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// loadAssignment lists the addresses of one cluster. It exists even when empty: an
// empty assignment tells Envoy there is nowhere to go, so requests get 503 (fail closed)
// instead of the cluster waiting for endpoints or keeping stale ones.
func loadAssignment(c *ir.Cluster) (*endpointv3.ClusterLoadAssignment, error) {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: c.Name}
	if len(c.Endpoints) == 0 {
		return cla, nil
	}
	lbs, err := buildEach(c.Endpoints, lbEndpoint)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	cla.Endpoints = []*endpointv3.LocalityLbEndpoints{{LbEndpoints: lbs}}
	return cla, nil
}

// lbEndpoint accepts IP literals only: a name here would make Envoy resolve it, which
// would bypass the DNS guard.
func lbEndpoint(e *ir.Endpoint) (*endpointv3.LbEndpoint, error) {
	ip, err := netip.ParseAddr(e.Address)
	if err != nil || ip.Zone() != "" {
		return nil, fmt.Errorf("endpoint address %q is not an IP address", e.Address)
	}
	if err := checkPort(e.Port); err != nil {
		return nil, fmt.Errorf("endpoint %s: %w", e.Address, err)
	}
	return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
		Address: socketAddress(ip.Unmap().String(), e.Port),
	}}}, nil
}
