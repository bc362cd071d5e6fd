package xds

import (
	"context"
	"slices"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// gatewayState is what the server keeps per Gateway.
type gatewayState struct {
	version string
	// typeVersions are the versions of each type in the published snapshot
	// (publish.go); history the last published, oldest first, the current one included.
	typeVersions map[string]string
	history      []publishedTypes
	resources    map[string]int
	types        map[string]*typeState
	streams      map[int64]*streamState
	// heldVersions are the last published versions of each type with the set of their
	// resources, which delta streams are checked against (delta.go).
	heldVersions map[string][]heldVersion
	// salts, per type URL, make the next snapshot send every resource of the type
	// again (resource_versions.go); a delta NACK and Resend bump them.
	salts map[string]int
}

// bumpSalt makes the next snapshot send every resource of typeURL again.
func (g *gatewayState) bumpSalt(typeURL string) {
	if g.salts == nil {
		g.salts = map[string]int{}
	}
	g.salts[typeURL]++
}

// streamState is one ADS stream, that is one connected Envoy.
type streamState struct {
	id          int64
	gateway     string // empty until the first request names the node
	nodeID      string
	connectedAt time.Time
	types       map[string]*typeState
	// kick ends the stream (kick.go); nil outside the gRPC server (tests of callbacks).
	kick context.CancelFunc
}

type typeState struct {
	TypeStatus
	nonce string // of the last response sent on the stream
	// delta mirrors what Envoy holds on an incremental stream (delta.go); nil on a
	// state-of-the-world one.
	delta *deltaType
}

// typeVersion is the published version of typeURL.
func (g *gatewayState) typeVersion(typeURL string) string {
	if v, ok := g.typeVersions[typeURL]; ok {
		return v
	}
	return g.version
}

func typeOf(types map[string]*typeState, typeURL string) *typeState {
	t := types[typeURL]
	if t == nil {
		t = &typeState{}
		types[typeURL] = t
	}
	return t
}

// gatewayLocked returns the state of gateway, creating it. s.mu must be held.
func (s *Server) gatewayLocked(gateway string) *gatewayState {
	g := s.gateways[gateway]
	if g == nil {
		g = &gatewayState{types: map[string]*typeState{}, streams: map[int64]*streamState{}}
		s.gateways[gateway] = g
	}
	return g
}

// forgetIfIdleLocked drops the state of a Gateway that has neither a snapshot nor an
// Envoy. s.mu must be held.
func (s *Server) forgetIfIdleLocked(gateway string) {
	if g := s.gateways[gateway]; g != nil && g.version == "" && len(g.streams) == 0 {
		delete(s.gateways, gateway)
	}
}

// callbacks follow every ADS stream through go-control-plane's callbacks, which run
// synchronously on the stream's goroutine: they only update state under s.mu and mark
// the Gateway as changed, and never block.
type callbacks struct{ s *Server }

var _ sotw.Callbacks = callbacks{}

func (c callbacks) OnStreamOpen(ctx context.Context, id int64, _ string) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	st := &streamState{id: id, types: map[string]*typeState{}}
	st.kick, _ = ctx.Value(kickKey{}).(context.CancelFunc)
	c.s.streams[id] = st
	return nil
}

func (c callbacks) OnStreamClosed(id int64, _ *corev3.Node) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[id]
	delete(s.streams, id)
	if st == nil || st.gateway == "" {
		return
	}
	delete(s.gateways[st.gateway].streams, id)
	s.forgetIfIdleLocked(st.gateway)
	s.log.Info("Envoy disconnected", "gateway", st.gateway, "node", st.nodeID, "stream", id)
	s.markNews(st.gateway)
}

// OnStreamRequest records ACKs and NACKs. A request answers the last response of its
// type when it carries that response's nonce: with error_detail it is a NACK of the
// version sent, otherwise an ACK of version_info. A request with an older nonce answers
// a superseded response and is ignored (go-control-plane ignores it too). The first
// request of a type on a stream reports in version_info the version Envoy already runs.
func (c callbacks) OnStreamRequest(id int64, req *discoveryv3.DiscoveryRequest) error {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[id]
	if st == nil {
		return status.Errorf(codes.Internal, "unknown stream %d", id)
	}
	if err := s.attachLocked(st, req.GetNode()); err != nil {
		return err
	}
	if s.recordRequestLocked(st, req) {
		s.markNews(st.gateway)
	}
	s.parkEmptyRequestLocked(st, req)
	return nil
}

// parkEmptyRequestLocked quiets a request that names no resource of a type Envoy only
// asks for by name (route tables, endpoints, secrets): Envoy wants none of them, e.g.
// after it rejected the listener that needed a route table. go-control-plane answers
// such a request with every resource of the type whenever the request's version differs
// from the snapshot's, Envoy ignores the answer and asks again with its old version,
// and the two looped tens of thousands of times a second. Presenting the snapshot's
// version as the request's makes the cache wait for the next snapshot instead (which
// it then sends once; Envoy ignores it once). Each type has its own version.
func (s *Server) parkEmptyRequestLocked(st *streamState, req *discoveryv3.DiscoveryRequest) {
	if len(req.GetResourceNames()) != 0 || !slices.Contains(namedOnlyTypes, req.GetTypeUrl()) {
		return
	}
	if gw := s.gateways[st.gateway]; gw != nil && gw.version != "" {
		req.VersionInfo = gw.typeVersion(req.GetTypeUrl())
	}
}

// attachLocked ties a stream to the Gateway its node names, on the first request.
func (s *Server) attachLocked(st *streamState, node *corev3.Node) error {
	gateway := node.GetCluster()
	if st.gateway != "" {
		if gateway != st.gateway {
			return status.Errorf(codes.InvalidArgument, "node.cluster changed from %q to %q on one stream", st.gateway, gateway)
		}
		return nil
	}
	if err := validGateway(gateway); err != nil {
		return status.Errorf(codes.InvalidArgument, "node.cluster must name the Gateway: %v", err)
	}
	st.gateway, st.nodeID, st.connectedAt = gateway, node.GetId(), s.now()
	s.gatewayLocked(gateway).streams[st.id] = st
	s.log.Info("Envoy connected", "gateway", gateway, "node", st.nodeID, "stream", st.id)
	s.markNews(gateway)
	return nil
}

func (s *Server) recordRequestLocked(st *streamState, req *discoveryv3.DiscoveryRequest) bool {
	gw := s.gateways[st.gateway]
	t := typeOf(st.types, req.GetTypeUrl())
	g := typeOf(gw.types, req.GetTypeUrl())
	now := s.now()
	switch {
	case t.nonce == "":
		v := req.GetVersionInfo()
		if v == "" || v == t.Acked {
			return false
		}
		t.Acked, t.AckedAt = v, now
		return true
	case req.GetResponseNonce() != t.nonce:
		return false
	case req.GetErrorDetail() != nil:
		s.recordNackLocked(st, t, g, req, now)
		return true
	default:
		v := req.GetVersionInfo()
		changed := t.Acked != v || t.Nack != nil
		t.Acked, t.AckedAt, t.Nack = v, now, nil
		g.Acked, g.AckedAt = v, now
		if g.Nack != nil && g.Nack.Version != v && v == gw.typeVersion(req.GetTypeUrl()) {
			g.Nack = nil // a newer version is in place
			changed = true
		}
		// Only a change of what Envoy runs is news: an ACK repeating the version it
		// already runs (a re-request) must not wake the reconciler.
		return changed
	}
}

// recordNackLocked keeps Envoy's message and parks the stream's watch: Envoy's NACK
// carries the last version it accepted, which differs from the snapshot's, so
// go-control-plane would resend the rejected response at once, and Envoy would reject
// it again, forever. Presenting the rejected version as the request's version makes the
// cache wait for the next snapshot instead.
func (s *Server) recordNackLocked(st *streamState, t, g *typeState, req *discoveryv3.DiscoveryRequest, now time.Time) {
	s.keepNackLocked(st, t, g, req.GetTypeUrl(), t.Sent, req.GetErrorDetail().GetMessage(), now)
	req.VersionInfo = t.Sent
}

// keepNackLocked records Envoy's rejection of version of typeURL on the stream (t) and
// for the Gateway (g), without any resource dump its message may carry, and logs it.
func (s *Server) keepNackLocked(st *streamState, t, g *typeState, typeURL, version, message string, now time.Time) {
	nack := Nack{Version: version, Message: redactResourceDump(message), NodeID: st.nodeID, At: now}
	t.Nack = &nack
	gatewayNack := nack
	g.Nack = &gatewayNack
	s.log.Info("Envoy rejected configuration", "gateway", st.gateway, "node", st.nodeID,
		"type", kind(typeURL), "version", nack.Version, "error", nack.Message)
}

func (c callbacks) OnStreamResponse(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[id]
	if st == nil || st.gateway == "" {
		return
	}
	now := s.now()
	t := typeOf(st.types, resp.GetTypeUrl())
	t.Sent, t.SentAt, t.nonce = resp.GetVersionInfo(), now, resp.GetNonce()
	g := typeOf(s.gateways[st.gateway].types, resp.GetTypeUrl())
	g.Sent, g.SentAt = resp.GetVersionInfo(), now
	// Not marked as a change: sending changes nothing Programmed depends on (the ACK or
	// NACK that follows does), and marking every response woke the reconciler once per
	// exchange.
}

// Envoy prefixes some rejections (proto constraint violations) with a text dump of the
// whole resource, private keys of secrets included. The dump starts with the marker of
// the protobuf debug format and ends where Envoy's own message starts.
const (
	debugDumpMarker   = "goo.gle/debugonly"
	constraintMessage = "Proto constraint validation failed"
)

// redactResourceDump removes such a dump from a NACK message, which is logged and ends
// up in the Gateway's status.
func redactResourceDump(message string) string {
	start := strings.Index(message, debugDumpMarker)
	if start < 0 {
		return message
	}
	rest := message[start:]
	if end := strings.Index(rest, constraintMessage); end >= 0 {
		return message[:start] + "[resource redacted]: " + rest[end:]
	}
	return message[:start] + "[resource redacted]"
}
