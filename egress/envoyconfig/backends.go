package envoyconfig

import (
	"fmt"
	"math"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// InvalidBackendCluster is the cluster that the share of an invalid backendRef is sent to.
// It is never defined (IR cluster names start with "backend/" or "service/"), so Envoy
// answers that share with the route's cluster_not_found_response_code, set to 500.
const InvalidBackendCluster = "portcullis/invalid-backend"

// forwardRoute sends the request to the route's backends.
func (b *builder) forwardRoute(r *ir.Route) (*routev3.Route, error) {
	targets, err := b.targets(r.Backends)
	if err != nil {
		return nil, err
	}
	a := &routev3.RouteAction{}
	if err := setDestination(a, r); err != nil {
		return nil, err
	}
	if err := applyURLRewrite(a, r.Rewrite, &r.Match); err != nil {
		return nil, err
	}
	applyProtocolNeeds(a, targets)
	applyTimeouts(a, r.Timeouts, r.Retry)
	applyRetry(a, r.Retry)
	applyMirrors(a, r.Mirrors)
	return &routev3.Route{Action: &routev3.Route_Route{Route: a}}, nil
}

// targets are the IR clusters a route forwards to; each must exist.
func (b *builder) targets(backends []ir.WeightedCluster) ([]*ir.Cluster, error) {
	out := make([]*ir.Cluster, 0, len(backends))
	for _, wc := range backends {
		c, ok := b.clusterNamed(wc.Cluster)
		if !ok {
			return nil, fmt.Errorf("backend cluster %q is not defined", wc.Cluster)
		}
		out = append(out, c)
	}
	return out, nil
}

// setDestination names a single cluster when one backend takes all the traffic, else
// splits it by weight, the invalid share included.
func setDestination(a *routev3.RouteAction, r *ir.Route) error {
	live := weighted(r.Backends)
	if len(live) == 1 && r.InvalidWeight == 0 && live[0].RequestHeaders == nil {
		a.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: live[0].Cluster}
		return nil
	}
	wc, err := weightedClusters(live, r.InvalidWeight)
	if err != nil {
		return err
	}
	a.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}
	if r.InvalidWeight > 0 {
		a.ClusterNotFoundResponseCode = routev3.RouteAction_INTERNAL_SERVER_ERROR
	}
	return nil
}

// weighted drops backends of weight 0: Gateway API sends them no traffic.
func weighted(backends []ir.WeightedCluster) []ir.WeightedCluster {
	out := make([]ir.WeightedCluster, 0, len(backends))
	for _, wc := range backends {
		if wc.Weight > 0 {
			out = append(out, wc)
		}
	}
	return out
}

func totalWeight(r *ir.Route) uint64 {
	total := uint64(r.InvalidWeight)
	for _, wc := range r.Backends {
		total += uint64(wc.Weight)
	}
	return total
}

// weightedClusters is the traffic split; a backendRef's own header filter rides on its
// entry. Envoy applies an entry's headers before the route's, so for a header that both
// the rule and the backendRef set, the rule's value is the one sent.
func weightedClusters(live []ir.WeightedCluster, invalid uint32) (*routev3.WeightedCluster, error) {
	out := &routev3.WeightedCluster{}
	var total uint64
	for _, wc := range live {
		cw := &routev3.WeightedCluster_ClusterWeight{Name: wc.Cluster, Weight: wrapperspb.UInt32(wc.Weight)}
		if m := wc.RequestHeaders; m != nil {
			add, err := headerOptions(m)
			if err != nil {
				return nil, fmt.Errorf("backend %q: %w", wc.Cluster, err)
			}
			cw.RequestHeadersToAdd, cw.RequestHeadersToRemove = add, m.Remove
		}
		out.Clusters = append(out.Clusters, cw)
		total += uint64(wc.Weight)
	}
	if invalid > 0 {
		out.Clusters = append(out.Clusters, &routev3.WeightedCluster_ClusterWeight{
			Name: InvalidBackendCluster, Weight: wrapperspb.UInt32(invalid),
		})
		total += uint64(invalid)
	}
	if total > math.MaxUint32 {
		return nil, fmt.Errorf("backend weights add up to %d, more than Envoy's limit %d", total, uint32(math.MaxUint32))
	}
	return out, nil
}
