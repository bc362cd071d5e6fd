package xds

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestDeltaEndpointsFollowTheirUpdatedCluster: Envoy holds back its acknowledgement of
// a cluster response while the clusters it updated warm, so a snapshot published
// meanwhile reaches the endpoints watch first and the cluster watch only when that
// acknowledgement comes. The updated cluster then warms waiting for endpoints that
// already went by; the server sends them again right after the cluster.
func TestDeltaEndpointsFollowTheirUpdatedCluster(t *testing.T) {
	s, _, c := startDelta(t)
	changed := func(spare, backend time.Duration) envoyconfig.Resources {
		res := twoClusters(t, 10080, backend)
		res.Clusters[1].ConnectTimeout = durationpb.New(spare)
		return res
	}

	// spare is updated; Envoy takes its endpoints but holds the cluster response's
	// acknowledgement while spare warms.
	publish(t, s, changed(3*time.Second, time.Second))
	got := c.responsesOf(2)
	heldBack := got[resource.ClusterType]
	c.ack(got[resource.EndpointType])

	// backend is updated meanwhile: only the endpoints watch is open, so its endpoints
	// go first, to the backend cluster Envoy still runs.
	v3 := publish(t, s, changed(3*time.Second, 2*time.Second))
	c.ack(c.nextCarrying(resource.EndpointType, "backend"))

	// spare is warm and Envoy acknowledges: the updated backend comes, and its
	// endpoints after it, for the new cluster to warm with.
	c.ack(heldBack)
	cds := c.next(resource.ClusterType)
	if sortedNames(cds) != "backend" || cds.GetSystemVersionInfo() != v3 {
		t.Fatalf("cluster response carries %v as %s, want backend as %s", names(cds), cds.GetSystemVersionInfo(), v3)
	}
	eds := c.nextCarrying(resource.EndpointType, "backend")
	c.ack(cds)
	c.ack(eds)
	c.noResponse(300 * time.Millisecond)
	waitProgrammedAt(t, s, v3)
}

// nextCarrying is the next response, which must be of typeURL and carry exactly the
// resources named want (sorted, comma-separated).
func (c *deltaClient) nextCarrying(typeURL, want string) *discoveryv3.DeltaDiscoveryResponse {
	c.t.Helper()
	resp := c.next(typeURL)
	if got := sortedNames(resp); got != want {
		c.t.Fatalf("%s response carries %q, want %q", kind(typeURL), got, want)
	}
	return resp
}

// TestDeltaNewClusterEndpointsWaitForTheSubscription: the endpoints of a cluster Envoy
// has not seen are sent when Envoy subscribes to them, once.
func TestDeltaNewClusterEndpointsWaitForTheSubscription(t *testing.T) {
	s, _, c := startDelta(t)
	res := twoClusters(t, 10080, time.Second)
	res.Clusters = append(res.Clusters, edsCluster(t, "third", "", ""))
	res.Endpoints = append(res.Endpoints, endpoints("third", 11))
	publish(t, s, res)

	cds := c.nextCarrying(resource.ClusterType, "third")
	c.noResponse(300 * time.Millisecond) // nothing of third is subscribed yet
	c.subscribe(resource.EndpointType, "third")
	eds := c.nextCarrying(resource.EndpointType, "third")
	c.ack(cds)
	c.ack(eds)
	c.noResponse(300 * time.Millisecond)
}

// TestEnvoyClusterUpdatedWhileAnotherWarmsGetsItsEndpoints runs the race of
// TestDeltaEndpointsFollowTheirUpdatedCluster with Envoy. A cluster whose initial
// health check hangs keeps Envoy warming, and its acknowledgement of the cluster
// response held back, for three seconds; meanwhile the cluster the route uses is
// updated from plaintext to TLS towards a TLS server. The new cluster must come into
// use once the other is warm, not fifteen seconds later when Envoy gives up waiting
// for its endpoints: until then the old cluster speaks plaintext to the TLS server,
// which answers 400.
func TestEnvoyClusterUpdatedWhileAnotherWarmsGetsItsEndpoints(t *testing.T) {
	t.Parallel()
	s := New(testr.New(t))
	addr, _ := serve(t, s)
	port := xdstest.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "over tls") }))
	t.Cleanup(upstream.Close)
	hanging := hangingServer(t)

	resources := func(slowTimeout time.Duration, backendTLS bool) envoyconfig.Resources {
		res := upstreamCluster(t, port, upstream.URL, time.Second)
		if backendTLS {
			res.Clusters[0].TransportSocket = &corev3.TransportSocket{
				Name:       "envoy.transport_sockets.tls",
				ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &tlsv3.UpstreamTlsContext{})},
			}
		}
		slow := edsCluster(t, "slow", "", "")
		slow.ConnectTimeout = durationpb.New(slowTimeout)
		slow.HealthChecks = []*corev3.HealthCheck{{
			Timeout: durationpb.New(3 * time.Second), Interval: durationpb.New(time.Minute),
			UnhealthyThreshold: wrapperspb.UInt32(1), HealthyThreshold: wrapperspb.UInt32(1),
			HealthChecker: &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: &corev3.HealthCheck_HttpHealthCheck{Path: "/healthz"}},
		}}
		res.Clusters = append(res.Clusters, slow)
		res.Endpoints = append(res.Endpoints, endpoints("slow", hanging))
		return res
	}

	v1 := publish(t, s, resources(time.Second, false))
	envoy := startEnvoy(t, addr)
	waitVersion(t, s, v1)
	envoy.WaitReady()
	xdstest.WaitFor(t, xdstest.Timeout, "plaintext to the TLS server to be refused", func() error {
		if _, err := get(plainClient, url); err == nil || !strings.Contains(err.Error(), "status 400") {
			return fmt.Errorf("GET: %v", err)
		}
		return nil
	})

	publish(t, s, resources(2*time.Second, false))
	xdstest.WaitFor(t, xdstest.Timeout, "the updated slow cluster to warm", func() error {
		if n, err := envoy.Stat("cluster_manager.warming_clusters"); err != nil || n != 1 {
			return fmt.Errorf("%d clusters warming (%v)", n, err)
		}
		return nil
	})
	published := time.Now()
	v3 := publish(t, s, resources(2*time.Second, true))
	xdstest.WaitFor(t, 10*time.Second, "the TLS cluster to serve", func() error {
		body, err := get(plainClient, url)
		if err != nil {
			return err
		}
		if body != "over tls" {
			return fmt.Errorf("body %q", body)
		}
		return nil
	})
	t.Logf("TLS served %v after it was published", time.Since(published).Round(10*time.Millisecond))
	waitVersion(t, s, v3)
	if n, err := envoy.Stat("cluster.backend.init_fetch_timeout"); err != nil || n != 0 {
		t.Fatalf("the updated backend cluster's endpoints timed out %d times (%v), want never", n, err)
	}
}

// hangingServer accepts connections and never answers on them; it returns its port.
func hangingServer(t *testing.T) uint32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return uint32(l.Addr().(*net.TCPAddr).Port)
}
