package xds

import (
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
)

// clusterResources is a listener, its route table, and an EDS cluster with endpoints;
// port picks the listener's port, timeout the cluster's connect timeout.
func clusterResources(t *testing.T, port uint32, timeout time.Duration) envoyconfig.Resources {
	c := edsCluster(t, "backend", "", "")
	c.ConnectTimeout = durationpb.New(timeout)
	return envoyconfig.Resources{
		Listeners: []*listenerv3.Listener{httpListener(t, "http", port, "http", "")},
		Routes:    []*routev3.RouteConfiguration{directRoute("http", "hello")},
		Clusters:  []*clusterv3.Cluster{c},
		Endpoints: []*endpointv3.ClusterLoadAssignment{endpoints("backend", 9)},
	}
}

func (c *adsClient) noResponse(within time.Duration) {
	c.t.Helper()
	select {
	case resp := <-c.responses:
		c.t.Fatalf("unexpected %s response version %s", resp.GetTypeUrl(), resp.GetVersionInfo())
	case <-time.After(within):
	}
}

func TestUnchangedTypesAreNotSentAgain(t *testing.T) {
	s := New(testr.New(t))
	addr, _ := serve(t, s)
	v1 := publish(t, s, clusterResources(t, 10080, time.Second))
	c := openADS(t, dial(t, addr), "envoy-a")
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resource.ClusterType})
	c.ack(c.next(resource.ClusterType))
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNames: []string{"backend"}})
	c.ack(c.next(resource.EndpointType), "backend")
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resource.ListenerType})
	c.ack(c.next(resource.ListenerType))
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: resource.RouteType, ResourceNames: []string{"http"}})
	c.ack(c.next(resource.RouteType), "http")
	waitProgrammed(t, s, ReasonProgrammed)

	// Only the listener changes: only listeners are sent, under the new version; the
	// other types keep theirs.
	v2 := publish(t, s, clusterResources(t, 10081, time.Second))
	lds := c.next(resource.ListenerType)
	if lds.GetVersionInfo() != v2 {
		t.Fatalf("listener response version = %s, want %s", lds.GetVersionInfo(), v2)
	}
	c.ack(lds)
	c.noResponse(300 * time.Millisecond)
	st := s.Status(testGateway)
	want := map[string]string{resource.ListenerType: v2, resource.ClusterType: v1, resource.EndpointType: v1,
		resource.RouteType: v1, resource.SecretType: v1}
	for typeURL, v := range want {
		if st.TypeVersions[typeURL] != v {
			t.Errorf("%s version = %s, want %s", kind(typeURL), st.TypeVersions[typeURL], v)
		}
	}
	_, message := waitProgrammed(t, s, ReasonProgrammed)
	if !strings.Contains(message, v2) {
		t.Errorf("Programmed message %q does not name %s", message, v2)
	}
	if versions, all := s.Status(testGateway).Running(); !all || !slices.Equal(versions, []string{v2}) {
		t.Errorf("Running() = %v, %v; want [%s], true", versions, all, v2)
	}

	// A changed cluster goes with its endpoints (Envoy warms an updated cluster until
	// it has them), unchanged ones too.
	v3 := publish(t, s, clusterResources(t, 10081, 2*time.Second))
	for _, typeURL := range []string{resource.ClusterType, resource.EndpointType} {
		resp := c.next(typeURL)
		if resp.GetVersionInfo() != v3 {
			t.Fatalf("%s response version = %s, want %s", kind(typeURL), resp.GetVersionInfo(), v3)
		}
		if typeURL == resource.EndpointType {
			c.ack(resp, "backend")
		} else {
			c.ack(resp)
		}
	}
	c.noResponse(300 * time.Millisecond)
	waitProgrammed(t, s, ReasonProgrammed)

	// Resend sends every type again.
	v4, err := s.Resend(testGateway)
	if err != nil {
		t.Fatal(err)
	}
	for _, typeURL := range []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType} {
		if resp := c.next(typeURL); resp.GetVersionInfo() != v4 {
			t.Fatalf("%s resent as version %s, want %s", kind(typeURL), resp.GetVersionInfo(), v4)
		}
	}
}

func TestProgrammedAndRunningWithMixedTypeVersions(t *testing.T) {
	s := New(testr.New(t))
	v1 := publishHello(t, s, "hello")
	e := connect(t, s, 1, "envoy-a")
	e.deliver(v1, ldsCdsRds...)
	running := func(want ...string) {
		t.Helper()
		versions, all := s.Status(testGateway).Running()
		slices.Sort(versions)
		slices.Sort(want)
		if !all || !slices.Equal(versions, want) {
			t.Errorf("Running() = %v, %v; want %v, true", versions, all, want)
		}
	}
	programmed := func(wantOK bool, wantMessage string) {
		t.Helper()
		ok, reason, message := s.Status(testGateway).Programmed()
		if ok != wantOK || !strings.Contains(message, wantMessage) {
			t.Errorf("Programmed() = %v, %s, %q; want %v, a message containing %q", ok, reason, message, wantOK, wantMessage)
		}
	}
	running(v1)
	programmed(true, v1)

	// v2 changes the route table only; Envoy still runs the v1 one, with clusters and
	// listeners that are v2's as much as v1's.
	v2 := publishHello(t, s, "hello again")
	if st := s.Status(testGateway); st.TypeVersion(resource.ListenerType) != v1 || st.TypeVersion(resource.RouteType) != v2 {
		t.Fatalf("type versions = %v; want listeners %s, routes %s", st.TypeVersions, v1, v2)
	}
	programmed(false, "RouteConfiguration configuration version "+v2)
	running(v1, v2)
	if versions, all := s.Status(testGateway).Running(); all && len(versions) == 1 {
		t.Errorf("an Envoy in the middle of an update runs one version: %v", versions)
	}
	e.deliver(v2, resource.RouteType)
	programmed(true, v2)
	running(v2)

	// A rejected route table stays rejected while later snapshots keep it.
	v3 := publishHello(t, s, "bad")
	e.respond(resource.RouteType, v3)
	e.nack(resource.RouteType, v2, "rejected")
	programmed(false, "version "+v3+": rejected")
	res := helloResources(t, 10081, "bad")
	v4 := publish(t, s, res)
	if st := s.Status(testGateway); st.TypeVersion(resource.RouteType) != v3 || st.TypeVersion(resource.ListenerType) != v4 {
		t.Fatalf("type versions = %v; want routes %s, listeners %s", st.TypeVersions, v3, v4)
	}
	programmed(false, "version "+v3+": rejected")

	// An empty route request is parked at the route table's own version.
	req := e.request(&discoveryv3.DiscoveryRequest{TypeUrl: resource.RouteType, VersionInfo: v2, ResponseNonce: "0"})
	if req.GetVersionInfo() != v3 {
		t.Errorf("empty route request presented as version %s, want the route version %s", req.GetVersionInfo(), v3)
	}

	// A version the server never published (an earlier server's) stands for itself.
	f := connect(t, s, 2, "envoy-b")
	for _, typeURL := range ldsCdsRds {
		f.subscribe(typeURL, "old")
	}
	if versions, _ := s.Status(testGateway).Running(); !slices.Contains(versions, "old") {
		t.Errorf("Running() = %v, want it to list the unknown version old", versions)
	}
}
