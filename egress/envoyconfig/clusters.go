package envoyconfig

import (
	"fmt"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// defaultConnectTimeout applies when the IR leaves ConnectTimeout at zero.
const defaultConnectTimeout = 10 * time.Second

// cluster is one destination. Envoy never resolves a name: endpoints are the vetted
// addresses, by EDS (inline in a static bootstrap).
func (b *builder) cluster(c *ir.Cluster) (*clusterv3.Cluster, error) {
	out := &clusterv3.Cluster{
		Name:             c.Name,
		AltStatName:      statName(c.Name),
		Metadata:         originMetadata(c),
		ConnectTimeout:   durationpb.New(connectTimeout(c.ConnectTimeout)),
		LbPolicy:         clusterv3.Cluster_ROUND_ROBIN,
		CircuitBreakers:  circuitBreakers(c.CircuitBreaker),
		OutlierDetection: outlierDetection(c.OutlierDetector),
	}
	if err := b.setDiscovery(out, c); err != nil {
		return nil, fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	if c.Protocol == ir.ProtocolTCP {
		return tcpCluster(out, c)
	}
	opts, err := b.protocolOptions(c)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	packed, err := pack(opts)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	out.TypedExtensionProtocolOptions = map[string]*anypb.Any{httpProtocolOpts: packed}
	if c.TLS != nil {
		if out.TransportSocket, err = b.upstreamTLS(c); err != nil {
			return nil, fmt.Errorf("cluster %q: %w", c.Name, err)
		}
	}
	return out, nil
}

// tcpCluster is a CONNECT tunnel's cluster: bytes only, no HTTP options, and never
// TLS (the client's TLS goes end to end).
func tcpCluster(out *clusterv3.Cluster, c *ir.Cluster) (*clusterv3.Cluster, error) {
	if c.TLS != nil || c.Credential != nil || c.RequestHeaders != nil {
		return nil, fmt.Errorf("cluster %q: a TCP cluster carries no TLS, credential or header changes", c.Name)
	}
	return out, nil
}

func connectTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return defaultConnectTimeout
	}
	return d
}

// setDiscovery makes the cluster take its endpoints from EDS over ADS, so that the DNS
// guard alone decides addresses; a static bootstrap inlines the same assignment.
func (b *builder) setDiscovery(out *clusterv3.Cluster, c *ir.Cluster) error {
	if !b.static {
		out.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}
		out.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource()}
		return nil
	}
	cla, err := loadAssignment(c)
	if err != nil {
		return err
	}
	out.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
	out.LoadAssignment = cla
	return nil
}

// circuitBreakers sets the default-priority thresholds the IR gives; a zero field keeps
// Envoy's default rather than allowing nothing.
func circuitBreakers(cb *ir.CircuitBreaker) *clusterv3.CircuitBreakers {
	if cb == nil {
		return nil
	}
	t := &clusterv3.CircuitBreakers_Thresholds{
		Priority:           corev3.RoutingPriority_DEFAULT,
		MaxConnections:     nonZero(cb.MaxConnections),
		MaxPendingRequests: nonZero(cb.MaxPendingRequests),
		MaxRequests:        nonZero(cb.MaxRequests),
	}
	return &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{t}}
}

// outlierDetection ejects endpoints after consecutive 5xx (connection failures count as
// 5xx), always enforced; zero fields keep Envoy's defaults.
func outlierDetection(od *ir.OutlierDetection) *clusterv3.OutlierDetection {
	if od == nil {
		return nil
	}
	return &clusterv3.OutlierDetection{
		Consecutive_5Xx:          nonZero(od.Consecutive5xx),
		Interval:                 nonZeroDuration(od.Interval),
		BaseEjectionTime:         nonZeroDuration(od.BaseEjectionTime),
		MaxEjectionPercent:       nonZero(od.MaxEjectionPercent),
		EnforcingConsecutive_5Xx: wrapperspb.UInt32(100),
	}
}

func nonZero(v uint32) *wrapperspb.UInt32Value {
	if v == 0 {
		return nil
	}
	return wrapperspb.UInt32(v)
}

func nonZeroDuration(d time.Duration) *durationpb.Duration {
	if d <= 0 {
		return nil
	}
	return durationpb.New(d)
}
