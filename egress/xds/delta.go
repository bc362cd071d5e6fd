package xds

import (
	"context"
	"maps"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Incremental (delta) ADS is what Portcullis' bootstraps ask for: a response carries
// only the resources that changed, each with its own version (the digest of its
// content, publish.go), so one new cluster among ten thousand costs Envoy one cluster,
// not ten thousand. State-of-the-world ADS is still served for Envoys started from an
// older bootstrap.
//
// A delta ACK carries no version: it answers a response by its nonce. And the server
// sends nothing when nothing this Envoy subscribes to changed, so a type's published
// version may be in force on an Envoy without any response carrying it. The server
// therefore keeps, per stream and type, a mirror of the resources (name → version)
// Envoy holds, and an Envoy runs a type's published version once it holds exactly the
// published resources and has no response unanswered. The mirror is checked on every
// request and on every publish.

// deltaType is what one Envoy holds of one type on a delta stream.
type deltaType struct {
	// held maps the name of each resource Envoy holds to its version: what it reported
	// when it connected (initial_resource_versions) and what it accepted since.
	held map[string]string
	// inFlight are the responses sent and not answered yet, by nonce.
	inFlight map[string]deltaSent
	// unsure is set by a NACK: Envoy may have applied part of the rejected response
	// (clusters and listeners are applied one by one), so the mirror no longer says
	// what it holds. It is cleared when Envoy accepts a response that carries every
	// resource it holds (the next snapshot sends them all: resource_versions.go).
	unsure bool
}

// deltaSent is one response: its system version (the type version) and what it changed.
type deltaSent struct {
	version   string
	resources map[string]string
	removed   []string
}

// deltaStreamID keeps the numbers of delta streams apart from state-of-the-world ones:
// go-control-plane numbers each kind of stream from 1.
func deltaStreamID(id int64) int64 { return -id }

var _ delta.Callbacks = callbacks{}

func (c callbacks) OnDeltaStreamOpen(ctx context.Context, id int64, typeURL string) error {
	return c.OnStreamOpen(ctx, deltaStreamID(id), typeURL)
}

func (c callbacks) OnDeltaStreamClosed(id int64, node *corev3.Node) {
	c.OnStreamClosed(deltaStreamID(id), node)
}

// OnStreamDeltaRequest records subscriptions, ACKs and NACKs. Only the first request
// of a stream must name the node (the bootstrap sets set_node_on_first_message_only,
// and go-control-plane fills the node in only after this callback).
func (c callbacks) OnStreamDeltaRequest(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[deltaStreamID(id)]
	if st == nil {
		return status.Errorf(codes.Internal, "unknown stream %d", deltaStreamID(id))
	}
	if st.gateway == "" || req.GetNode() != nil {
		if err := s.attachLocked(st, req.GetNode()); err != nil {
			return err
		}
	}
	if s.recordDeltaRequestLocked(st, req) {
		s.changes.mark(st.gateway)
	}
	return nil
}

// recordDeltaRequestLocked applies a request to the stream's mirror and tells whether
// what the Envoy runs (or rejected) changed.
func (s *Server) recordDeltaRequestLocked(st *streamState, req *discoveryv3.DeltaDiscoveryRequest) bool {
	typeURL := req.GetTypeUrl()
	t := typeOf(st.types, typeURL)
	if t.delta == nil {
		t.delta = &deltaType{held: maps.Clone(req.GetInitialResourceVersions()), inFlight: map[string]deltaSent{}}
		if t.delta.held == nil {
			t.delta.held = map[string]string{}
		}
	}
	d := t.delta
	for _, name := range req.GetResourceNamesUnsubscribe() {
		delete(d.held, name)
	}
	changed := false
	if sent, ok := d.inFlight[req.GetResponseNonce()]; ok {
		delete(d.inFlight, req.GetResponseNonce())
		d.apply(sent)
		switch {
		case req.GetErrorDetail() != nil:
			s.recordDeltaNackLocked(st, t, sent.version, req)
			changed = true
		case t.Nack != nil:
			t.Nack = nil
			changed = true
		}
		if req.GetErrorDetail() == nil && d.unsure && carriesAll(sent, d.held) {
			d.unsure = false
		}
	}
	return s.syncDeltaLocked(st, typeURL) || changed
}

// apply updates the mirror with a response Envoy answered. go-control-plane counts a
// response as delivered once sent, whether Envoy accepts it or not, and sends only what
// differs from that; the mirror follows it.
func (d *deltaType) apply(sent deltaSent) {
	maps.Copy(d.held, sent.resources)
	for _, name := range sent.removed {
		delete(d.held, name)
	}
}

// recordDeltaNackLocked keeps Envoy's message, marks the mirror unsure and asks the
// next snapshot to send every resource of the type again (publish.go), as a
// state-of-the-world server would: go-control-plane believes Envoy holds what it
// rejected and would otherwise never send it again.
func (s *Server) recordDeltaNackLocked(st *streamState, t *typeState, version string, req *discoveryv3.DeltaDiscoveryRequest) {
	t.delta.unsure = true
	g := s.gateways[st.gateway]
	g.bumpSalt(req.GetTypeUrl())
	s.keepNackLocked(st, t, typeOf(g.types, req.GetTypeUrl()), req.GetTypeUrl(), version, req.GetErrorDetail().GetMessage(), s.now())
}

// syncDeltaLocked records that the stream runs the published version of typeURL when
// its mirror says Envoy holds exactly the published resources and waits for no answer.
// It tells whether that is news.
func (s *Server) syncDeltaLocked(st *streamState, typeURL string) bool {
	g := s.gateways[st.gateway]
	t := st.types[typeURL]
	if g == nil || g.version == "" || t == nil || t.delta == nil {
		return false
	}
	want, d := g.typeVersion(typeURL), t.delta
	if t.Acked == want || d.unsure || len(d.inFlight) > 0 || !sameVersions(d.held, g.resourceVersions[typeURL]) {
		return false
	}
	now := s.now()
	t.Acked, t.AckedAt, t.Nack = want, now, nil
	gt := typeOf(g.types, typeURL)
	gt.Acked, gt.AckedAt = want, now
	if gt.Nack != nil && (gt.Nack.Version != want || gt.Nack.NodeID == st.nodeID) {
		gt.Nack = nil // a newer version is in place, or this Envoy accepted the rejected one resent
	}
	return true
}

// syncDeltaStreamsLocked checks the mirror of every delta stream of the Gateway after a
// publish: the server sends a type only to Envoys that subscribe to a changed resource.
func (s *Server) syncDeltaStreamsLocked(g *gatewayState) {
	for _, st := range g.streams {
		for typeURL, t := range st.types {
			if t.delta != nil {
				s.syncDeltaLocked(st, typeURL)
			}
		}
	}
}

// carriesAll tells whether a response carried every resource of held.
func carriesAll(sent deltaSent, held map[string]string) bool {
	for name := range held {
		if _, ok := sent.resources[name]; !ok {
			return false
		}
	}
	return true
}

func sameVersions(held, published map[string]string) bool {
	if len(held) != len(published) {
		return false
	}
	for name, v := range published {
		if held[name] != v {
			return false
		}
	}
	return true
}

func (c callbacks) OnStreamDeltaResponse(id int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[deltaStreamID(id)]
	if st == nil || st.gateway == "" {
		return
	}
	t := typeOf(st.types, resp.GetTypeUrl())
	if t.delta == nil {
		t.delta = &deltaType{held: map[string]string{}, inFlight: map[string]deltaSent{}}
	}
	sent := deltaSent{version: resp.GetSystemVersionInfo(), resources: make(map[string]string, len(resp.GetResources())), removed: resp.GetRemovedResources()}
	published := s.gateways[st.gateway].resourceVersions[resp.GetTypeUrl()]
	for _, r := range resp.GetResources() {
		v := r.GetVersion()
		if p, ok := published[r.GetName()]; ok && p == v {
			v = p // the published string: a mirror of ten thousand holds no copies
		}
		sent.resources[r.GetName()] = v
	}
	t.delta.inFlight[resp.GetNonce()] = sent
	now := s.now()
	t.Sent, t.SentAt, t.nonce = sent.version, now, resp.GetNonce()
	g := typeOf(s.gateways[st.gateway].types, resp.GetTypeUrl())
	g.Sent, g.SentAt = sent.version, now
}
