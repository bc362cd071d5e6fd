package xdstest

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// FetchClusters opens an ADS stream to the xDS server at addr over TLS with cfg, as an
// Envoy whose node.cluster is gateway, asks for clusters and returns the first response
// or the stream's error: how a test plays a local process that tries to read a
// Gateway's configuration.
func FetchClusters(t *testing.T, addr string, cfg *tls.Config, gateway string) (*discoveryv3.DiscoveryResponse, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&discoveryv3.DiscoveryRequest{
		Node:    &corev3.Node{Id: "test-envoy", Cluster: gateway},
		TypeUrl: resource.ClusterType,
	}); err != nil {
		return nil, err
	}
	return stream.Recv()
}
