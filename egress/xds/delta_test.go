package xds

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// deltaClient is a minimal incremental ADS client standing in for Envoy. It keeps what
// it holds per type, as Envoy does, to report it when it reconnects.
type deltaClient struct {
	t         *testing.T
	stream    discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	cancel    context.CancelFunc
	responses chan *discoveryv3.DeltaDiscoveryResponse
	recvErr   chan error
	node      *corev3.Node
	held      map[string]map[string]string
}

func openDelta(t *testing.T, conn *grpc.ClientConn, nodeID string, held map[string]map[string]string) *deltaClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if held == nil {
		held = map[string]map[string]string{}
	}
	c := &deltaClient{t: t, stream: stream, cancel: cancel, responses: make(chan *discoveryv3.DeltaDiscoveryResponse, 16),
		recvErr: make(chan error, 1), node: &corev3.Node{Id: nodeID, Cluster: testGateway}, held: held}
	go pump(stream.Recv, c.responses, c.recvErr)
	return c
}

// send sends a request; like Envoy (set_node_on_first_message_only) only the first one
// names the node.
func (c *deltaClient) send(req *discoveryv3.DeltaDiscoveryRequest) {
	c.t.Helper()
	if c.node != nil {
		req.Node, c.node = c.node, nil
	}
	if err := c.stream.Send(req); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// subscribe is the first request of a type: the names wanted (none: all, for
// clusters and listeners) and the versions held from an earlier stream.
func (c *deltaClient) subscribe(typeURL string, names ...string) {
	c.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: names, InitialResourceVersions: c.held[typeURL]})
}

func (c *deltaClient) next(typeURL string) *discoveryv3.DeltaDiscoveryResponse {
	c.t.Helper()
	return nextOf(c.t, c.responses, c.recvErr, typeURL)
}

func (c *deltaClient) noResponse(within time.Duration) {
	c.t.Helper()
	select {
	case resp := <-c.responses:
		c.t.Fatalf("unexpected %s response with %d resources", resp.GetTypeUrl(), len(resp.GetResources()))
	case <-time.After(within):
	}
}

// ack accepts a response and holds what it carried.
func (c *deltaClient) ack(resp *discoveryv3.DeltaDiscoveryResponse) {
	c.t.Helper()
	held := c.held[resp.GetTypeUrl()]
	if held == nil {
		held = map[string]string{}
		c.held[resp.GetTypeUrl()] = held
	}
	for _, r := range resp.GetResources() {
		held[r.GetName()] = r.GetVersion()
	}
	for _, name := range resp.GetRemovedResources() {
		delete(held, name)
	}
	c.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce()})
}

func (c *deltaClient) nack(resp *discoveryv3.DeltaDiscoveryResponse, message string) {
	c.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(),
		ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: message}})
}

// names lists the resources a response carries.
func names(resp *discoveryv3.DeltaDiscoveryResponse) []string {
	var out []string
	for _, r := range resp.GetResources() {
		out = append(out, r.GetName())
	}
	return out
}

// twoClusters is clusterResources with a second cluster and its endpoints.
func twoClusters(t *testing.T, port uint32, timeout time.Duration) envoyconfig.Resources {
	res := clusterResources(t, port, timeout)
	res.Clusters = append(res.Clusters, edsCluster(t, "spare", "", ""))
	res.Endpoints = append(res.Endpoints, endpoints("spare", 10))
	return res
}

// deltaStart subscribes to every type of twoClusters in Envoy's order and accepts it.
func deltaStart(t *testing.T, c *deltaClient) {
	t.Helper()
	c.subscribe(resource.ClusterType)
	c.ack(c.next(resource.ClusterType))
	c.subscribe(resource.EndpointType, "backend", "spare")
	c.ack(c.next(resource.EndpointType))
	c.subscribe(resource.ListenerType)
	c.ack(c.next(resource.ListenerType))
	c.subscribe(resource.RouteType, "http")
	c.ack(c.next(resource.RouteType))
}

// staticCluster is a cluster with its endpoints inline: it fetches nothing by EDS.
func staticCluster(name string, port uint32) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		LoadAssignment:       endpoints(name, port),
	}
}

// responses reads n responses, by type URL.
func (c *deltaClient) responsesOf(n int) map[string]*discoveryv3.DeltaDiscoveryResponse {
	c.t.Helper()
	got := map[string]*discoveryv3.DeltaDiscoveryResponse{}
	for len(got) < n {
		select {
		case resp := <-c.responses:
			got[resp.GetTypeUrl()] = resp
		case <-time.After(xdstest.Timeout):
			c.t.Fatalf("got %d responses, want %d", len(got), n)
		}
	}
	return got
}

func sortedNames(resp *discoveryv3.DeltaDiscoveryResponse) string {
	return strings.Join(slices.Sorted(slices.Values(names(resp))), ",")
}

// waitProgrammedAt waits until the Gateway is Programmed with version.
func waitProgrammedAt(t *testing.T, s *Server, version string) {
	t.Helper()
	if _, message := waitProgrammed(t, s, ReasonProgrammed); !strings.Contains(message, version) {
		t.Fatalf("Programmed = %q, want version %s", message, version)
	}
}

// startDelta serves twoClusters to one delta client that accepted all of it.
func startDelta(t *testing.T) (*Server, *grpc.ClientConn, *deltaClient) {
	t.Helper()
	s := New(testr.New(t))
	addr, _ := serve(t, s)
	publish(t, s, twoClusters(t, 10080, time.Second))
	conn := dial(t, addr)
	c := openDelta(t, conn, "envoy-a", nil)
	deltaStart(t, c)
	waitProgrammed(t, s, ReasonProgrammed)
	return s, conn, c
}

func TestDeltaADSSendsOnlyWhatChanged(t *testing.T) {
	s, _, c := startDelta(t)
	for name, v := range c.held[resource.ClusterType] {
		if b, err := hex.DecodeString(v); err != nil || len(b) != 32 {
			t.Fatalf("cluster %s has version %q on the wire, want its SHA-256 in hex", name, v)
		}
	}

	// One cluster changes: it alone is sent, with its endpoints (Envoy warms an updated
	// cluster until it has them again).
	v2 := publish(t, s, func() envoyconfig.Resources {
		res := twoClusters(t, 10080, time.Second)
		res.Clusters[1].ConnectTimeout = durationpb.New(3 * time.Second)
		return res
	}())
	got := c.responsesOf(2)
	cds, eds := got[resource.ClusterType], got[resource.EndpointType]
	if sortedNames(cds) != "spare" || cds.GetSystemVersionInfo() != v2 || sortedNames(eds) != "spare" {
		t.Fatalf("sent clusters %v as version %s and endpoints %v, want spare as %s and its endpoints", names(cds), cds.GetSystemVersionInfo(), names(eds), v2)
	}
	if _, reason, _ := s.Status(testGateway).Programmed(); reason != ReasonPending {
		t.Fatalf("Programmed reason before the ACKs = %s, want Pending", reason)
	}
	c.ack(cds)
	c.ack(eds)
	c.noResponse(300 * time.Millisecond)
	waitProgrammedAt(t, s, v2)

	// A cluster without endpoints by EDS is added: the endpoints type takes the new
	// version (it changes with clusters) though nothing of it is sent; the Envoy runs it.
	withStatic := func() envoyconfig.Resources {
		res := twoClusters(t, 10080, time.Second)
		res.Clusters[1].ConnectTimeout = durationpb.New(3 * time.Second)
		res.Clusters = append(res.Clusters, staticCluster("static", 11))
		return res
	}
	v3 := publish(t, s, withStatic())
	cds = c.next(resource.ClusterType)
	if sortedNames(cds) != "static" {
		t.Fatalf("sent clusters %v, want static", names(cds))
	}
	c.ack(cds)
	c.noResponse(300 * time.Millisecond)
	_, message := waitProgrammed(t, s, ReasonProgrammed)
	if !strings.Contains(message, v3) || s.Status(testGateway).TypeVersion(resource.EndpointType) != v3 {
		t.Fatalf("Programmed = %q with endpoints version %s, want version %s for both", message, s.Status(testGateway).TypeVersion(resource.EndpointType), v3)
	}

	// Removed clusters and their endpoints are removed, nothing is sent again.
	v4 := publish(t, s, clusterResources(t, 10080, time.Second))
	got = c.responsesOf(2)
	cds, eds = got[resource.ClusterType], got[resource.EndpointType]
	if len(cds.GetResources()) != 0 || strings.Join(slices.Sorted(slices.Values(cds.GetRemovedResources())), ",") != "spare,static" {
		t.Fatalf("cluster response carries %v and removes %v, want spare and static removed", names(cds), cds.GetRemovedResources())
	}
	if len(eds.GetResources()) != 0 || strings.Join(eds.GetRemovedResources(), ",") != "spare" {
		t.Fatalf("endpoints response carries %v and removes %v, want only spare removed", names(eds), eds.GetRemovedResources())
	}
	c.ack(cds)
	c.ack(eds)
	// Envoy drops the endpoints of a removed cluster by unsubscribing.
	c.send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNamesUnsubscribe: []string{"spare"}})
	c.noResponse(300 * time.Millisecond)
	waitProgrammedAt(t, s, v4)
}

func TestDeltaReconnectGetsOnlyWhatChanged(t *testing.T) {
	s, conn, first := startDelta(t)
	first.cancel()
	xdstest.WaitFor(t, xdstest.Timeout, "the stream to close", func() error {
		if n := len(s.Status(testGateway).Envoys); n != 0 {
			return fmt.Errorf("%d Envoys connected", n)
		}
		return nil
	})

	// The same server, a changed route; the Envoy reconnects with what it holds.
	v2 := publish(t, s, func() envoyconfig.Resources {
		res := twoClusters(t, 10080, time.Second)
		res.Routes = []*routev3.RouteConfiguration{directRoute("http", "changed")}
		return res
	}())
	c := openDelta(t, conn, "envoy-a", first.held)
	c.subscribe(resource.ClusterType)
	if cds := c.next(resource.ClusterType); len(cds.GetResources()) != 0 {
		t.Fatalf("reconnected, the clusters held were sent again: %v", names(cds))
	} else {
		c.ack(cds)
	}
	// Endpoints are sent again: their versions on the wire cannot carry their clusters'.
	c.subscribe(resource.EndpointType, "backend", "spare")
	if eds := c.next(resource.EndpointType); sortedNames(eds) != "backend,spare" {
		t.Fatalf("endpoints sent on reconnection: %v, want both", names(eds))
	} else {
		c.ack(eds)
	}
	c.subscribe(resource.ListenerType)
	c.ack(c.next(resource.ListenerType))
	c.subscribe(resource.RouteType, "http")
	if rds := c.next(resource.RouteType); sortedNames(rds) != "http" {
		t.Fatalf("route response carries %v, want the changed http", names(rds))
	} else {
		c.ack(rds)
	}
	c.noResponse(300 * time.Millisecond)
	waitProgrammedAt(t, s, v2)
}

func TestDeltaNackIsReportedAndTheTypeResentWhole(t *testing.T) {
	s, _, c := startDelta(t)

	// Both clusters change; Envoy rejects them (having applied, maybe, one).
	v2 := publish(t, s, twoClusters(t, 10080, 2*time.Second))
	got := c.responsesOf(2)
	c.nack(got[resource.ClusterType], "cluster spare: no good")
	c.ack(got[resource.EndpointType])
	_, message := waitProgrammed(t, s, ReasonRejected)
	if !strings.Contains(message, "no good") || !strings.Contains(message, v2) {
		t.Fatalf("Rejected message %q lacks Envoy's message or version %s", message, v2)
	}
	c.noResponse(300 * time.Millisecond) // no resend loop

	// The next snapshot changes only the route, yet every cluster is sent again (the
	// server cannot know which of the rejected ones Envoy applied), with its endpoints.
	v3 := publish(t, s, func() envoyconfig.Resources {
		res := twoClusters(t, 10080, 2*time.Second)
		res.Routes = []*routev3.RouteConfiguration{directRoute("http", "changed")}
		return res
	}())
	got = c.responsesOf(3)
	if sortedNames(got[resource.ClusterType]) != "backend,spare" || sortedNames(got[resource.EndpointType]) != "backend,spare" {
		t.Fatalf("after the NACK the clusters sent are %v and the endpoints %v, want both", names(got[resource.ClusterType]), names(got[resource.EndpointType]))
	}
	if _, reason, _ := s.Status(testGateway).Programmed(); reason == ReasonProgrammed {
		t.Fatalf("Programmed before Envoy accepted the resent clusters")
	}
	for _, resp := range got {
		c.ack(resp)
	}
	waitProgrammedAt(t, s, v3)
	if nack := s.Status(testGateway).Types[resource.ClusterType].Nack; nack != nil {
		t.Fatalf("the rejection is still reported: %+v", nack)
	}
}

func TestDeltaResendSendsEverythingAgain(t *testing.T) {
	s, _, c := startDelta(t)
	v, err := s.Resend(testGateway)
	if err != nil {
		t.Fatal(err)
	}
	for _, typeURL := range []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType} {
		resp := c.next(typeURL)
		if resp.GetSystemVersionInfo() != v || len(resp.GetResources()) == 0 {
			t.Fatalf("%s resent as version %s with %v, want %s with every resource", kind(typeURL), resp.GetSystemVersionInfo(), names(resp), v)
		}
		c.ack(resp)
	}
	waitProgrammedAt(t, s, v)
}

// upstreamCluster routes every request of the listener on port to an EDS cluster
// whose one endpoint is upstream; timeout is the cluster's connect timeout.
func upstreamCluster(t *testing.T, port uint32, upstream string, timeout time.Duration) envoyconfig.Resources {
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	upstreamPort, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	c := edsCluster(t, "backend", "", "")
	c.ConnectTimeout = durationpb.New(timeout)
	route := &routev3.RouteConfiguration{Name: "http", VirtualHosts: []*routev3.VirtualHost{{
		Name: "all", Domains: []string{"*"},
		Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "backend"}}},
		}},
	}}}
	return envoyconfig.Resources{
		Listeners: []*listenerv3.Listener{httpListener(t, "http", port, "http", "")},
		Routes:    []*routev3.RouteConfiguration{route},
		Clusters:  []*clusterv3.Cluster{c},
		Endpoints: []*endpointv3.ClusterLoadAssignment{endpoints("backend", uint32(upstreamPort))},
	}
}

// An updated cluster is warmed from the endpoints Envoy already holds: the delta server
// does not send unchanged endpoints again, and the new cluster must not stay warming
// (the old one would serve forever).
func TestEnvoyUpdatedClusterWarmsOverDelta(t *testing.T) {
	t.Parallel()
	s := New(testr.New(t))
	addr, _ := serve(t, s)
	port := xdstest.FreePort(t)
	answer := func(body string) string {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) }))
		t.Cleanup(up.Close)
		return up.URL
	}
	first, second := answer("first"), answer("second")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)

	v1 := publish(t, s, upstreamCluster(t, port, first, time.Second))
	envoy := startEnvoy(t, addr)
	waitVersion(t, s, v1)
	envoy.WaitReady()
	waitBody(t, plainClient, url, "first")

	v2 := publish(t, s, upstreamCluster(t, port, first, 3*time.Second))
	waitVersion(t, s, v2)
	xdstest.WaitFor(t, xdstest.Timeout, "the updated cluster to be warm", func() error {
		warming, err := envoy.Stat("cluster_manager.warming_clusters")
		if err != nil {
			return err
		}
		updated, err := envoy.Stat("cluster_manager.cluster_modified")
		if err != nil {
			return err
		}
		if warming != 0 || updated != 1 {
			return fmt.Errorf("%d clusters warming, %d modified", warming, updated)
		}
		return nil
	})
	if dump := envoy.ConfigDump(); !strings.Contains(string(dump), `"connect_timeout": "3s"`) {
		t.Fatalf("Envoy's active cluster does not have the new connect timeout")
	}
	// Without its endpoints sent again the new cluster waits out the initial fetch
	// timeout (15 s) before it leaves warming, which this stat counts.
	if n, err := envoy.Stat("cluster.backend.init_fetch_timeout"); err != nil || n != 0 {
		t.Fatalf("the updated cluster's endpoints timed out %d times (%v), want never", n, err)
	}
	waitBody(t, plainClient, url, "first")

	v3 := publish(t, s, upstreamCluster(t, port, second, 3*time.Second))
	waitVersion(t, s, v3)
	waitBody(t, plainClient, url, "second")
}

// An Envoy behind the latest snapshot runs one of the versions before it, and says so:
// under a stream of changes (pods starting) it is always a response or two behind.
func TestDeltaEnvoyBehindRunsAnEarlierVersion(t *testing.T) {
	s, _, c := startDelta(t)
	v2 := publish(t, s, twoClusters(t, 10081, time.Second))
	lds := c.next(resource.ListenerType)
	v3 := publish(t, s, twoClusters(t, 10082, time.Second))
	c.ack(lds) // of v2, while v3 is published
	xdstest.WaitFor(t, xdstest.Timeout, "the Envoy to run "+v2, func() error {
		st := s.Status(testGateway)
		if got := st.Envoys[0].Types[resource.ListenerType].Acked; got != v2 {
			return fmt.Errorf("listeners acknowledged: %q", got)
		}
		if versions, all := st.Running(); !all || !slices.Contains(versions, v2) {
			return fmt.Errorf("Running() = %v, %v", versions, all)
		}
		return nil
	})
	c.ack(c.next(resource.ListenerType))
	waitProgrammedAt(t, s, v3)
}
