package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// TestStuckEnvoyDoesNotHoldBackOthers: an Envoy of the Gateway that receives every
// configuration but never acknowledges one must not keep a deleted route serving on
// the Envoys that do. Staging gives up waiting for it after StagingPatience and says so
// in a Warning Event on the Gateway.
func TestStuckEnvoyDoesNotHoldBackOthers(t *testing.T) {
	w := newWorld(t)
	w.port = xdstest.FreePort(t)
	w.envoy = w.startEnvoy("stuck-gw/egress")
	up := testupstream.Start(t, testupstream.Options{Name: "stuck"})
	w.dns.Set("api.stuck.test", "api.stuck.test. 60 IN A 127.0.0.1")
	objs := w.apply(egressGatewayYAML("stuck-gw", w.port, "Same") + fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: stuck-gw}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: api.stuck.test}
    ports: [{name: http, port: %d, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: keep, namespace: stuck-gw}
spec:
  parentRefs: [{name: egress}]
  hostnames: [keep.stuck.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: doomed, namespace: stuck-gw}
spec:
  parentRefs: [{name: egress}]
  hostnames: [doomed.stuck.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
`, up.Port()))
	waitAnswer(t, w.port, hostAddr, "doomed.stuck.test", 200, "hello from stuck")

	kickAfter := KickAfter
	KickAfter = time.Second // not the 20 s a busy node gets: the test would wait for it
	t.Cleanup(func() { KickAfter = kickAfter })
	kicked := connectStuckEnvoy(t, w.xdsPort, "stuck-gw/egress")
	var doomed client.Object
	for _, o := range objs {
		if o.GetName() == "doomed" {
			doomed = o
		}
	}
	deleted := time.Now()
	if err := w.c.Delete(context.Background(), doomed); err != nil {
		t.Fatal(err)
	}
	xdstest.WaitFor(t, 20*time.Second, "the deleted route to stop serving on the Envoy that acknowledges", func() error {
		return answerIs(hostAddr, w.port, "doomed.stuck.test", 403, "denied: no route")
	})
	t.Logf("the deleted route stopped serving %s after its deletion, with a stuck Envoy connected", time.Since(deleted).Round(100*time.Millisecond))
	wantAnswer(t, w.port, hostAddr, "keep.stuck.test", 200, "hello from stuck")
	xdstest.WaitFor(t, 10*time.Second, "a Warning Event naming the stuck Envoy", func() error {
		var events corev1.EventList
		if err := w.c.List(context.Background(), &events, client.InNamespace("stuck-gw")); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "EnvoyNotAcknowledging" && e.InvolvedObject.Kind == "Gateway" {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
	// Its stream is closed so that a reconnection mends it (xds.Server.Kick).
	select {
	case err := <-kicked:
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("the stuck Envoy's stream ended with %v, want Unavailable from the server", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stuck Envoy's stream was not closed")
	}
}

// connectStuckEnvoy opens an ADS stream as an Envoy of the Gateway that asks for every
// type and then never acknowledges a response; the channel gets the stream's end.
func connectStuckEnvoy(t *testing.T, xdsPort uint32, gateway string) <-chan error {
	t.Helper()
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", xdsPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); conn.Close() })
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev3.Node{Id: "stuck-envoy", Cluster: gateway}
	for _, typeURL := range []string{resource.ClusterType, resource.ListenerType} {
		if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typeURL}); err != nil {
			t.Fatal(err)
		}
	}
	ended := make(chan error, 1)
	go func() { // read and drop: a stuck Envoy's socket still drains
		for {
			if _, err := stream.Recv(); err != nil {
				ended <- err
				return
			}
		}
	}()
	return ended
}
