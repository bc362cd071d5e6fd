package xds

import (
	"context"
	"hash/maphash"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Incremental (delta) ADS is what Portcullis' bootstraps ask for: a response carries
// only the resources that changed, each with its own version (the digest of its
// content, resource_versions.go), so one new cluster among ten thousand costs Envoy
// one cluster, not ten thousand. State-of-the-world ADS is still served for Envoys started from an
// older bootstrap.
//
// A delta ACK carries no version: it answers a response by its nonce. And the server
// sends nothing when nothing this Envoy subscribes to changed, so a type's published
// version may be in force on an Envoy without any response carrying it. The server
// therefore keeps, per stream and type, a mirror of the resources (name → version)
// Envoy holds, and an Envoy runs a published version of a type once it holds exactly
// that version's resources and has no response unanswered. The mirror is checked on
// every request and on every publish.

// heldSet is an order-independent digest of a set of resources (name and version):
// the XOR of a keyed hash of each, and their number. Adding or removing one resource is
// O(1), so the mirror of what an Envoy holds is compared with a published set, or with
// each of the last published sets of its type, without walking ten thousand entries.
type heldSet struct {
	sum   uint64
	count int
}

// heldSeed keys the hashes: a tenant who names resources cannot aim at a collision.
var heldSeed = maphash.MakeSeed()

func heldHash(name, version string) uint64 {
	var h maphash.Hash
	h.SetSeed(heldSeed)
	h.WriteString(name)
	h.WriteByte(0)
	h.WriteString(version)
	return h.Sum64()
}

// heldSet is the set of st's versions on the wire.
func (st *sorted) heldSet() heldSet {
	var set heldSet
	for i, name := range st.names {
		set.add(heldHash(name, st.facts[i].version))
	}
	return set
}

// add and remove change the set by one resource, given as its heldHash.
func (set *heldSet) add(h uint64)    { set.sum ^= h; set.count++ }
func (set *heldSet) remove(h uint64) { set.sum ^= h; set.count-- }

// changed is the set of after, given that it is this set of before with only the
// removed and dirty names (repeats allowed) differing; before and after give a name's
// version, false for none.
func (set heldSet) changed(before, after func(name string) (string, bool), removed, dirty []string) heldSet {
	seen := make(map[string]bool, len(removed)+len(dirty))
	for _, names := range [][]string{removed, dirty} {
		for _, name := range names {
			if seen[name] {
				continue
			}
			seen[name] = true
			if v, ok := before(name); ok {
				set.remove(heldHash(name, v))
			}
			if v, ok := after(name); ok {
				set.add(heldHash(name, v))
			}
		}
	}
	return set
}

// deltaType is what one Envoy holds of one type on a delta stream.
type deltaType struct {
	// held maps the name of each resource Envoy holds to the hash of its name and
	// version: what it reported when it connected (initial_resource_versions) and what
	// it accepted since; heldSet is their digest.
	held    map[string]uint64
	heldSet heldSet
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
	resources map[string]uint64 // name → heldHash
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
	c.s.cache.forgetStream(id)
	c.OnStreamClosed(deltaStreamID(id), node)
}

// OnStreamDeltaRequest records subscriptions, ACKs and NACKs. Only the first request
// of a stream must name the node (the bootstrap sets set_node_on_first_message_only,
// and go-control-plane fills the node in only after this callback).
func (c callbacks) OnStreamDeltaRequest(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
	s := c.s
	s.cache.expect(req, id)
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
		s.markNews(st.gateway)
	}
	return nil
}

// recordDeltaRequestLocked applies a request to the stream's mirror and tells whether
// what the Envoy runs (or rejected) changed.
func (s *Server) recordDeltaRequestLocked(st *streamState, req *discoveryv3.DeltaDiscoveryRequest) bool {
	typeURL := req.GetTypeUrl()
	t := typeOf(st.types, typeURL)
	if t.delta == nil {
		t.delta = newDeltaType()
		t.delta.apply(deltaSent{resources: hashed(req.GetInitialResourceVersions())})
	}
	d := t.delta
	d.apply(deltaSent{removed: req.GetResourceNamesUnsubscribe()})
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

func newDeltaType() *deltaType {
	return &deltaType{held: map[string]uint64{}, inFlight: map[string]deltaSent{}}
}

// hashed are versions (name → version) as the mirror keeps them.
func hashed(versions map[string]string) map[string]uint64 {
	out := make(map[string]uint64, len(versions))
	for name, v := range versions {
		out[name] = heldHash(name, v)
	}
	return out
}

// apply updates the mirror with a response Envoy answered (or with what it reported
// or unsubscribed). go-control-plane counts a response as delivered once sent, whether
// Envoy accepts it or not, and sends only what differs from that; the mirror follows it.
func (d *deltaType) apply(sent deltaSent) {
	for name, h := range sent.resources {
		d.drop(name)
		d.held[name] = h
		d.heldSet.add(h)
	}
	for _, name := range sent.removed {
		d.drop(name)
	}
}

func (d *deltaType) drop(name string) {
	if h, ok := d.held[name]; ok {
		delete(d.held, name)
		d.heldSet.remove(h)
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

// syncDeltaLocked records which published version of typeURL the stream runs: the
// newest of the type's recent versions whose resources are exactly those the mirror
// says Envoy holds, once it waits for no answer. Under a stream of changes Envoy is
// always a response or two behind the latest snapshot, and what it runs meanwhile is
// one of the versions before (Running lists it). It tells whether that is news.
func (s *Server) syncDeltaLocked(st *streamState, typeURL string) bool {
	g := s.gateways[st.gateway]
	t := st.types[typeURL]
	if g == nil || g.version == "" || t == nil || t.delta == nil || t.delta.unsure || len(t.delta.inFlight) > 0 {
		return false
	}
	runs, ok := g.versionHolding(typeURL, t.delta.heldSet, t.Acked)
	if !ok || runs == t.Acked {
		return false
	}
	now := s.now()
	t.Acked, t.AckedAt, t.Nack = runs, now, nil
	gt := typeOf(g.types, typeURL)
	gt.Acked, gt.AckedAt = runs, now
	if gt.Nack != nil && (gt.Nack.Version != runs || gt.Nack.NodeID == st.nodeID) {
		gt.Nack = nil // a newer version is in place, or this Envoy accepted the rejected one resent
	}
	return true
}

// heldVersion is one published version of a type and the set of its resources.
type heldVersion struct {
	version string
	set     heldSet
}

// versionHolding finds the newest recent version of typeURL whose resources are set,
// not older than acked (the version the Envoy was found to run before).
func (g *gatewayState) versionHolding(typeURL string, set heldSet, acked string) (string, bool) {
	recent := g.heldVersions[typeURL]
	for i := len(recent) - 1; i >= 0; i-- {
		if recent[i].set == set {
			return recent[i].version, true
		}
		if recent[i].version == acked {
			return "", false
		}
	}
	return "", false
}

// rememberHeld records the resources of each type of a published snapshot under the
// type's version, keeping the last maxHeldVersions versions of each type.
func (g *gatewayState) rememberHeld(typeVersions map[string]string, sets map[string]heldSet) {
	if g.heldVersions == nil {
		g.heldVersions = map[string][]heldVersion{}
	}
	for typeURL, set := range sets {
		v := typeVersions[typeURL]
		if v == "" {
			v = g.version
		}
		recent := g.heldVersions[typeURL]
		if n := len(recent); n > 0 && recent[n-1].version == v {
			continue
		}
		recent = append(recent, heldVersion{version: v, set: set})
		if len(recent) > maxHeldVersions {
			recent = slices.Clone(recent[len(recent)-maxHeldVersions:])
		}
		g.heldVersions[typeURL] = recent
	}
}

// maxHeldVersions bounds the versions per type a delta stream's mirror is compared
// with: an Envoy more than this many versions of a type behind shows the version it
// ran before until it catches up.
const maxHeldVersions = 16

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
func carriesAll(sent deltaSent, held map[string]uint64) bool {
	for name := range held {
		if _, ok := sent.resources[name]; !ok {
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
		t.delta = newDeltaType()
	}
	sent := deltaSent{version: resp.GetSystemVersionInfo(), resources: make(map[string]uint64, len(resp.GetResources())), removed: resp.GetRemovedResources()}
	for _, r := range resp.GetResources() {
		sent.resources[r.GetName()] = heldHash(r.GetName(), r.GetVersion())
	}
	t.delta.inFlight[resp.GetNonce()] = sent
	now := s.now()
	t.Sent, t.SentAt, t.nonce = sent.version, now, resp.GetNonce()
	g := typeOf(s.gateways[st.gateway].types, resp.GetTypeUrl())
	g.Sent, g.SentAt = sent.version, now
}
