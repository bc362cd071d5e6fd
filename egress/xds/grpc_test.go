package xds

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// serve starts s on a loopback port and stops it when the test ends, failing the test
// if Serve does not return within the graceful stop bound.
func serve(t *testing.T, s *Server, opts ...grpc.ServerOption) (addr *net.TCPAddr, stop func()) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, lis, opts...) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve returned %v", err)
			}
		case <-time.After(gracefulStopWait + 5*time.Second):
			t.Errorf("Serve did not return after its context ended")
		}
	}
	t.Cleanup(stop)
	return lis.Addr().(*net.TCPAddr), stop
}

// adsClient is a minimal ADS client standing in for Envoy.
type adsClient struct {
	t         *testing.T
	stream    discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	responses chan *discoveryv3.DiscoveryResponse
	recvErr   chan error
	node      *corev3.Node
}

func dial(t *testing.T, addr *net.TCPAddr) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func openADS(t *testing.T, conn *grpc.ClientConn, nodeID string) *adsClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &adsClient{t: t, stream: stream, responses: make(chan *discoveryv3.DiscoveryResponse, 16),
		recvErr: make(chan error, 1), node: &corev3.Node{Id: nodeID, Cluster: testGateway}}
	go pump(stream.Recv, c.responses, c.recvErr)
	return c
}

// pump hands every message received to out and the error that ends the stream to errs.
func pump[T any](recv func() (T, error), out chan<- T, errs chan<- error) {
	for {
		m, err := recv()
		if err != nil {
			errs <- err
			return
		}
		out <- m
	}
}

func (c *adsClient) send(req *discoveryv3.DiscoveryRequest) {
	c.t.Helper()
	req.Node = c.node
	if err := c.stream.Send(req); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

func (c *adsClient) next(typeURL string) *discoveryv3.DiscoveryResponse {
	c.t.Helper()
	return nextOf(c.t, c.responses, c.recvErr, typeURL)
}

// nextOf is the next response of a test client's stream, which must be of typeURL.
func nextOf[R interface{ GetTypeUrl() string }](t *testing.T, responses <-chan R, recvErr <-chan error, typeURL string) R {
	t.Helper()
	var none R
	select {
	case resp := <-responses:
		if resp.GetTypeUrl() != typeURL {
			t.Fatalf("got a %s response, want %s", resp.GetTypeUrl(), typeURL)
		}
		return resp
	case err := <-recvErr:
		t.Fatalf("stream ended waiting for %s: %v", typeURL, err)
	case <-time.After(xdstest.Timeout):
		t.Fatalf("no %s response within %s", typeURL, xdstest.Timeout)
	}
	return none
}

func (c *adsClient) ack(resp *discoveryv3.DiscoveryResponse, names ...string) {
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resp.GetTypeUrl(), VersionInfo: resp.GetVersionInfo(),
		ResponseNonce: resp.GetNonce(), ResourceNames: names})
}

func waitProgrammed(t *testing.T, s *Server, wantReason string) (string, string) {
	t.Helper()
	var reason, message string
	xdstest.WaitFor(t, xdstest.Timeout, "Programmed reason "+wantReason, func() error {
		_, reason, message = s.Status(testGateway).Programmed()
		if reason != wantReason {
			return errors.New(reason + ": " + message)
		}
		return nil
	})
	return reason, message
}

func TestADSOverGRPC(t *testing.T) {
	s := New(testr.New(t))
	addr, stop := serve(t, s)
	v1, _, err := s.Publish(testGateway, helloResources(t, 10080, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	c := openADS(t, dial(t, addr), "envoy-a")

	// Envoy's order: clusters, then listeners, then the routes the listeners name.
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resource.ClusterType})
	c.ack(c.next(resource.ClusterType))
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resource.ListenerType})
	lds := c.next(resource.ListenerType)
	if lds.GetVersionInfo() != v1 || len(lds.GetResources()) != 1 {
		t.Fatalf("listener response = version %s with %d resources, want %s with 1", lds.GetVersionInfo(), len(lds.GetResources()), v1)
	}
	c.ack(lds)
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resource.RouteType, ResourceNames: []string{"http"}})
	rds := c.next(resource.RouteType)
	c.ack(rds, "http")
	waitProgrammed(t, s, ReasonProgrammed)
	select {
	case gw := <-s.Changes():
		if gw != testGateway {
			t.Fatalf("Changes() = %q, want %q", gw, testGateway)
		}
	case <-time.After(xdstest.Timeout):
		t.Fatalf("Changes() emitted nothing")
	}

	// A rejected version: Envoy NACKs it, the server does not send it again.
	bad := helloResources(t, 10080, "")
	bad.Routes = []*routev3.RouteConfiguration{badRegexRoute("http")}
	v2, _, err := s.Publish(testGateway, bad)
	if err != nil {
		t.Fatal(err)
	}
	// Only the route table changed: clusters and listeners keep their versions and are
	// not sent again.
	rds = c.next(resource.RouteType)
	if rds.GetVersionInfo() != v2 {
		t.Fatalf("route response version = %s, want %s", rds.GetVersionInfo(), v2)
	}
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resource.RouteType, VersionInfo: v1, ResponseNonce: rds.GetNonce(),
		ResourceNames: []string{"http"}, ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: "bad regex"}})
	_, message := waitProgrammed(t, s, ReasonRejected)
	if !strings.Contains(message, "bad regex") {
		t.Fatalf("Rejected message %q lacks Envoy's message", message)
	}
	select {
	case resp := <-c.responses:
		t.Fatalf("the server sent %s version %s again after the NACK", resp.GetTypeUrl(), resp.GetVersionInfo())
	case <-time.After(500 * time.Millisecond):
	}

	// A good version again reaches Envoy at once.
	v3, _, err := s.Publish(testGateway, helloResources(t, 10080, "hello again"))
	if err != nil {
		t.Fatal(err)
	}
	resp := c.next(resource.RouteType)
	if resp.GetVersionInfo() != v3 {
		t.Fatalf("route response version = %s, want %s", resp.GetVersionInfo(), v3)
	}
	c.ack(resp, "http")
	waitProgrammed(t, s, ReasonProgrammed)
	if tv := s.Status(testGateway).TypeVersions; tv[resource.ClusterType] != v1 || tv[resource.ListenerType] != v1 || tv[resource.RouteType] != v3 {
		t.Fatalf("type versions = %v, want clusters and listeners %s, routes %s", tv, v1, v3)
	}

	stop()
	select {
	case err := <-c.recvErr:
		if err == nil {
			t.Fatalf("stream ended without an error")
		}
	case <-time.After(xdstest.Timeout):
		t.Fatalf("the stream outlived the server")
	}
}

func TestServeTwiceIsRefused(t *testing.T) {
	s := New(testr.New(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 2)
	for range 2 {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer lis.Close()
		go func() { served <- s.Serve(ctx, lis) }()
	}
	wait := func() error {
		select {
		case err := <-served:
			return err
		case <-time.After(xdstest.Timeout):
			t.Fatalf("Serve did not return")
			return nil
		}
	}
	if err := wait(); err == nil {
		t.Fatalf("one Serve returned nil while the other serves, want the second one refused")
	}
	cancel()
	if err := wait(); err != nil {
		t.Fatalf("the serving Serve returned %v after its context ended, want nil", err)
	}
}
