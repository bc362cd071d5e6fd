package xds

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
)

// fakeEnvoy drives the server's callbacks the way go-control-plane's stream handler does
// for one ADS stream: OnStreamOpen, then OnStreamRequest for every DiscoveryRequest and
// OnStreamResponse before every response.
type fakeEnvoy struct {
	t      *testing.T
	s      *Server
	stream int64
	node   *corev3.Node
	nonce  int
	// last nonce and version sent per type
	sent map[string][2]string
}

func connect(t *testing.T, s *Server, stream int64, nodeID string) *fakeEnvoy {
	t.Helper()
	if err := (callbacks{s}).OnStreamOpen(context.Background(), stream, resource.AnyType); err != nil {
		t.Fatal(err)
	}
	return &fakeEnvoy{t: t, s: s, stream: stream, node: &corev3.Node{Id: nodeID, Cluster: testGateway}, sent: map[string][2]string{}}
}

// request sends a DiscoveryRequest and returns it as the cache would then see it.
func (e *fakeEnvoy) request(req *discoveryv3.DiscoveryRequest) *discoveryv3.DiscoveryRequest {
	e.t.Helper()
	req.Node = e.node
	if err := (callbacks{e.s}).OnStreamRequest(e.stream, req); err != nil {
		e.t.Fatalf("request %v refused: %v", req, err)
	}
	return req
}

// subscribe is the first request of a type on the stream, reporting the version Envoy runs.
func (e *fakeEnvoy) subscribe(typeURL, running string) {
	e.request(&discoveryv3.DiscoveryRequest{TypeUrl: typeURL, VersionInfo: running})
}

// respond is the server sending version of typeURL.
func (e *fakeEnvoy) respond(typeURL, version string) {
	e.nonce++
	nonce := strconv.Itoa(e.nonce)
	e.sent[typeURL] = [2]string{nonce, version}
	(callbacks{e.s}).OnStreamResponse(context.Background(), e.stream,
		&discoveryv3.DiscoveryRequest{TypeUrl: typeURL},
		&discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Nonce: nonce})
}

// ack accepts the last response of typeURL.
func (e *fakeEnvoy) ack(typeURL string) {
	last := e.sent[typeURL]
	e.request(&discoveryv3.DiscoveryRequest{TypeUrl: typeURL, VersionInfo: last[1], ResponseNonce: last[0]})
}

// nack rejects the last response of typeURL; like Envoy it reports the version it still runs.
func (e *fakeEnvoy) nack(typeURL, running, message string) *discoveryv3.DiscoveryRequest {
	last := e.sent[typeURL]
	return e.request(&discoveryv3.DiscoveryRequest{
		TypeUrl: typeURL, VersionInfo: running, ResponseNonce: last[0],
		ErrorDetail: &statuspb.Status{Code: 3, Message: message},
	})
}

// deliver sends version of every type and Envoy accepts it. When version is the
// published one, each type goes with its own published version, as the cache sends it.
func (e *fakeEnvoy) deliver(version string, typeURLs ...string) {
	st := e.s.Status(e.node.GetCluster())
	for _, typeURL := range typeURLs {
		v := version
		if st.Version == version {
			v = st.TypeVersion(typeURL)
		}
		e.respond(typeURL, v)
		e.ack(typeURL)
	}
}

func (e *fakeEnvoy) close() { (callbacks{e.s}).OnStreamClosed(e.stream, e.node) }

var ldsCdsRds = []string{resource.ClusterType, resource.ListenerType, resource.RouteType}

func publishHello(t *testing.T, s *Server, body string) string {
	t.Helper()
	v, _, err := s.Publish(testGateway, helloResources(t, 10080, body))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAckNackStateMachine(t *testing.T) {
	type result struct {
		ok      bool
		reason  string
		message string // a part of the message
	}
	tests := []struct {
		name string
		run  func(t *testing.T, s *Server) result
	}{
		{
			name: "nothing published",
			run: func(t *testing.T, s *Server) result {
				return result{false, ReasonPending, "no configuration is published"}
			},
		},
		{
			name: "published but no Envoy connected",
			run: func(t *testing.T, s *Server) result {
				publishHello(t, s, "hello")
				return result{false, ReasonPending, "no Envoy"}
			},
		},
		{
			name: "ACK of every published type programs the Gateway",
			run: func(t *testing.T, s *Server) result {
				v := publishHello(t, s, "hello")
				e := connect(t, s, 1, "envoy-a")
				for _, typeURL := range ldsCdsRds {
					e.subscribe(typeURL, "")
				}
				e.deliver(v, ldsCdsRds...)
				return result{true, ReasonProgrammed, "1 Envoy(s) run configuration version " + v}
			},
		},
		{
			name: "routes sent but not yet acknowledged",
			run: func(t *testing.T, s *Server) result {
				v := publishHello(t, s, "hello")
				e := connect(t, s, 1, "envoy-a")
				e.deliver(v, resource.ClusterType, resource.ListenerType)
				e.subscribe(resource.RouteType, "")
				e.respond(resource.RouteType, v)
				return result{false, ReasonPending, "accept the RouteConfiguration configuration version " + v}
			},
		},
		{
			name: "an ACK of the previous version after a publish is pending",
			run: func(t *testing.T, s *Server) result {
				v1 := publishHello(t, s, "hello")
				e := connect(t, s, 1, "envoy-a")
				e.deliver(v1, ldsCdsRds...)
				v2 := publishHello(t, s, "hello again")
				e.respond(resource.ListenerType, v2)
				return result{false, ReasonPending, "version " + v2}
			},
		},
		{
			name: "NACK with error_detail rejects with Envoy's message",
			run: func(t *testing.T, s *Server) result {
				v1 := publishHello(t, s, "hello")
				e := connect(t, s, 1, "envoy-a")
				e.deliver(v1, ldsCdsRds...)
				v2 := publishHello(t, s, "hello again")
				e.deliver(v2, resource.ClusterType, resource.ListenerType)
				e.respond(resource.RouteType, v2)
				req := e.nack(resource.RouteType, v1, "Invalid regex '(': missing )")
				if req.GetVersionInfo() != v2 {
					t.Errorf("the NACK reaches the cache with version %q, want the rejected %q (no resend loop)", req.GetVersionInfo(), v2)
				}
				nack := s.Status(testGateway).Types[resource.RouteType].Nack
				if nack == nil || nack.Version != v2 || nack.NodeID != "envoy-a" {
					t.Errorf("gateway NACK = %+v, want version %s from envoy-a", nack, v2)
				}
				return result{false, ReasonRejected, "Envoy envoy-a rejected the RouteConfiguration configuration version " + v2 + ": Invalid regex '(': missing )"}
			},
		},
		{
			name: "a later ACK clears the NACK",
			run: func(t *testing.T, s *Server) result {
				v1 := publishHello(t, s, "hello")
				e := connect(t, s, 1, "envoy-a")
				e.deliver(v1, ldsCdsRds...)
				v2 := publishHello(t, s, "bad")
				e.respond(resource.RouteType, v2)
				e.nack(resource.RouteType, v1, "rejected")
				v3 := publishHello(t, s, "good")
				e.deliver(v3, ldsCdsRds...)
				if nack := s.Status(testGateway).Types[resource.RouteType].Nack; nack != nil {
					t.Errorf("gateway NACK = %+v after a later ACK, want none", nack)
				}
				return result{true, ReasonProgrammed, v3}
			},
		},
		{
			name: "a NACK of a superseded version is pending, not rejected",
			run: func(t *testing.T, s *Server) result {
				v1 := publishHello(t, s, "hello")
				e := connect(t, s, 1, "envoy-a")
				e.deliver(v1, ldsCdsRds...)
				v2 := publishHello(t, s, "bad")
				e.respond(resource.RouteType, v2)
				e.nack(resource.RouteType, v1, "rejected")
				publishHello(t, s, "good")
				return result{false, ReasonPending, "waiting for Envoy envoy-a"}
			},
		},
		{
			name: "a request answering a superseded response is ignored",
			run: func(t *testing.T, s *Server) result {
				v1 := publishHello(t, s, "hello")
				e := connect(t, s, 1, "envoy-a")
				e.deliver(v1, resource.ClusterType, resource.ListenerType)
				e.respond(resource.RouteType, v1)
				stale := e.sent[resource.RouteType][0]
				e.respond(resource.RouteType, v1)
				e.request(&discoveryv3.DiscoveryRequest{TypeUrl: resource.RouteType, ResponseNonce: stale,
					ErrorDetail: &statuspb.Status{Message: "stale"}})
				if nack := s.Status(testGateway).Types[resource.RouteType].Nack; nack != nil {
					t.Errorf("a stale NACK was recorded: %+v", nack)
				}
				e.ack(resource.RouteType)
				return result{true, ReasonProgrammed, v1}
			},
		},
		{
			name: "a reconnecting Envoy reports the version it runs",
			run: func(t *testing.T, s *Server) result {
				v := publishHello(t, s, "hello")
				e := connect(t, s, 7, "envoy-a")
				for _, typeURL := range ldsCdsRds {
					e.subscribe(typeURL, v)
				}
				return result{true, ReasonProgrammed, v}
			},
		},
		{
			name: "every connected Envoy must accept",
			run: func(t *testing.T, s *Server) result {
				v := publishHello(t, s, "hello")
				connect(t, s, 1, "envoy-a").deliver(v, ldsCdsRds...)
				b := connect(t, s, 2, "envoy-b")
				b.deliver(v, resource.ClusterType, resource.ListenerType)
				return result{false, ReasonPending, "waiting for Envoy envoy-b to accept the RouteConfiguration configuration version " + v + " (not sent yet; it runs none yet)"}
			},
		},
		{
			name: "a pending message says the version was sent and what Envoy runs meanwhile",
			run: func(t *testing.T, s *Server) result {
				v1 := publishHello(t, s, "hello")
				e := connect(t, s, 1, "envoy-a")
				e.deliver(v1, ldsCdsRds...)
				v2 := publishHello(t, s, "again")
				e.respond(resource.RouteType, v2)
				return result{false, ReasonPending, "waiting for Envoy envoy-a to accept the RouteConfiguration configuration version " + v2 + " (sent, not answered yet; it runs version " + v1 + ")"}
			},
		},
		{
			name: "a NACK outlives the stream of the Envoy that sent it",
			run: func(t *testing.T, s *Server) result {
				v1 := publishHello(t, s, "hello")
				a := connect(t, s, 1, "envoy-a")
				a.deliver(v1, ldsCdsRds...)
				v2 := publishHello(t, s, "bad")
				a.respond(resource.RouteType, v2)
				a.nack(resource.RouteType, v1, "boom")
				a.close()
				connect(t, s, 2, "envoy-b").deliver(v1, ldsCdsRds...)
				return result{false, ReasonRejected, "Envoy envoy-a rejected the RouteConfiguration configuration version " + v2 + ": boom"}
			},
		},
		{
			name: "a closed stream removes its Envoy",
			run: func(t *testing.T, s *Server) result {
				v := publishHello(t, s, "hello")
				e := connect(t, s, 1, "envoy-a")
				e.deliver(v, ldsCdsRds...)
				e.close()
				if n := len(s.Status(testGateway).Envoys); n != 0 {
					t.Errorf("%d Envoys after the stream closed, want 0", n)
				}
				return result{false, ReasonPending, "no Envoy"}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(testr.New(t))
			want := tt.run(t, s)
			ok, reason, message := s.Status(testGateway).Programmed()
			if ok != want.ok || reason != want.reason || !strings.Contains(message, want.message) {
				t.Fatalf("Programmed() = %v, %q, %q; want %v, %q, a message containing %q",
					ok, reason, message, want.ok, want.reason, want.message)
			}
		})
	}
}

func TestStreamRefusesNodeWithoutGateway(t *testing.T) {
	tests := []struct {
		name    string
		cluster string
	}{
		{"empty node.cluster", ""},
		{"node.cluster without namespace", "egress"},
		{"node.cluster with two slashes", "a/b/c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(testr.New(t))
			c := callbacks{s}
			if err := c.OnStreamOpen(context.Background(), 1, resource.AnyType); err != nil {
				t.Fatal(err)
			}
			err := c.OnStreamRequest(1, &discoveryv3.DiscoveryRequest{
				TypeUrl: resource.ClusterType, Node: &corev3.Node{Id: "envoy", Cluster: tt.cluster},
			})
			if err == nil {
				t.Fatalf("a stream from node.cluster %q was accepted", tt.cluster)
			}
		})
	}
}

func TestStatusRecordsTimesAndEnvoys(t *testing.T) {
	s := New(testr.New(t))
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.now = func() time.Time { return clock }
	v := publishHello(t, s, "hello")
	e := connect(t, s, 3, "envoy-a")
	e.subscribe(resource.ListenerType, "")
	e.respond(resource.ListenerType, v)
	clock = clock.Add(time.Second)
	e.ack(resource.ListenerType)

	st := s.Status(testGateway)
	if len(st.Envoys) != 1 || st.Envoys[0].NodeID != "envoy-a" || st.Envoys[0].StreamID != 3 {
		t.Fatalf("Envoys = %+v, want envoy-a on stream 3", st.Envoys)
	}
	lds := st.Envoys[0].Types[resource.ListenerType]
	if lds.Sent != v || lds.Acked != v || lds.AckedAt.Sub(lds.SentAt) != time.Second {
		t.Fatalf("listener status = %+v, want version %s sent and acknowledged a second later", lds, v)
	}
	if got := st.Types[resource.ListenerType]; got.Acked != v {
		t.Fatalf("gateway listener status = %+v, want version %s acknowledged", got, v)
	}
}

func TestNackMessagesHideResourceDumps(t *testing.T) {
	tests := []struct {
		name    string
		message string
		want    string
	}{
		{
			name: "proto constraint violation with the secret dumped (Envoy 1.40)",
			message: "goo.gle/debugonly    \nname: \"gateway-cert\"\ntls_certificate {\n  certificate_chain {\n    filename: \"\"\n  }\n" +
				"  private_key {\n    inline_string: \"SECRETKEYMATERIAL\"\n  }\n}\n: Proto constraint validation failed " +
				"(SecretValidationError.TlsCertificate: embedded message failed validation)",
			want: "[resource redacted]: Proto constraint validation failed (SecretValidationError.TlsCertificate: embedded message failed validation)",
		},
		{
			name:    "a dump without Envoy's constraint message is dropped whole",
			message: "bad config: goo.gle/debugonly private_key { inline_string: \"SECRETKEYMATERIAL\" }",
			want:    "bad config: [resource redacted]",
		},
		{
			name:    "an ordinary message is kept",
			message: "Failed to load private key from <inline>, Cause: error:0b000074:X.509 certificate routines:OPENSSL_internal:KEY_VALUES_MISMATCH",
			want:    "Failed to load private key from <inline>, Cause: error:0b000074:X.509 certificate routines:OPENSSL_internal:KEY_VALUES_MISMATCH",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(testr.New(t))
			v1 := publishHello(t, s, "hello")
			e := connect(t, s, 1, "envoy-a")
			e.deliver(v1, ldsCdsRds...)
			v2 := publishHello(t, s, "again")
			e.respond(resource.RouteType, v2)
			e.nack(resource.RouteType, v1, tt.message)
			nack := s.Status(testGateway).Types[resource.RouteType].Nack
			if nack == nil || nack.Message != tt.want {
				t.Fatalf("NACK = %+v, want message %q", nack, tt.want)
			}
			if _, _, message := s.Status(testGateway).Programmed(); strings.Contains(message, "SECRETKEYMATERIAL") {
				t.Fatalf("the Programmed message leaks the key: %q", message)
			}
		})
	}
}
