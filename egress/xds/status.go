package xds

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// Reasons returned by GatewayStatus.Programmed.
const (
	ReasonProgrammed = "Programmed"
	ReasonRejected   = "Rejected"
	ReasonPending    = "Pending"
)

// GatewayStatus is what the xDS server knows about one Gateway and its Envoy fleet.
type GatewayStatus struct {
	Gateway string
	// Version is the content hash of the published snapshot; empty when none is.
	Version string
	// TypeVersions is the version of each type (URL) in the published snapshot: a type
	// unchanged since the previous snapshot keeps its version, a changed one has Version.
	// An Envoy that acknowledged each type's version runs Version.
	TypeVersions map[string]string
	// history is the per-type versions of the last published snapshots, oldest first.
	history []publishedTypes
	// Resources counts the published resources by type URL.
	Resources map[string]int
	// Types is the latest exchange per type URL with any Envoy of the Gateway. It
	// outlives the streams, so a NACK stays visible after the Envoy that sent it is gone.
	Types map[string]TypeStatus
	// Envoys are the Envoys connected now, sorted by node ID and stream.
	Envoys []EnvoyStatus
}

// EnvoyStatus is one connected Envoy (one ADS stream).
type EnvoyStatus struct {
	NodeID      string
	StreamID    int64
	ConnectedAt time.Time
	// Types is the exchange per type URL on this stream.
	Types map[string]TypeStatus
}

// TypeStatus follows the responses of one resource type.
type TypeStatus struct {
	// Sent is the version of the last response sent.
	Sent   string
	SentAt time.Time
	// Acked is the last version Envoy accepted. On a stream, before any response, it is
	// the version Envoy says it runs (from an earlier stream).
	Acked   string
	AckedAt time.Time
	// Nack is the last rejection. On a stream the next ACK clears it; for the Gateway,
	// an ACK of a newer published version does.
	Nack *Nack
	// Mirror is, on an incremental stream, what the server believes Envoy holds
	// (delta.go); nil otherwise. A type whose Acked stays behind while nothing is in
	// flight holds a set no recent version has: Held against the published count says
	// how far apart they are.
	Mirror *MirrorStatus
}

// MirrorStatus is the server's mirror of one type on an incremental stream.
type MirrorStatus struct {
	Held     int  // resources Envoy holds
	InFlight int  // responses sent and not answered
	Unsure   bool // a rejection left the mirror unsure of what Envoy holds
}

// Nack is Envoy's rejection of a response.
type Nack struct {
	// Version is the rejected version.
	Version string
	// Message is Envoy's error_detail message.
	Message string
	NodeID  string
	At      time.Time
}

// Programmed tells whether the Envoys of the Gateway run the published configuration:
// Programmed once every connected Envoy acknowledged the published version of listeners,
// clusters and every other type the snapshot holds (each type's own version); Rejected
// when an Envoy rejected the published version of a type, with Envoy's message; Pending
// otherwise.
func (s GatewayStatus) Programmed() (ok bool, reason, message string) {
	if s.Version == "" {
		return false, ReasonPending, "no configuration is published for the Gateway yet"
	}
	if nack, typeURL := s.rejection(); nack != nil {
		return false, ReasonRejected, fmt.Sprintf("Envoy %s rejected the %s configuration version %s: %s",
			nack.NodeID, kind(typeURL), nack.Version, nack.Message)
	}
	if len(s.Envoys) == 0 {
		return false, ReasonPending, "no Envoy of the Gateway is connected to the xDS server"
	}
	for _, e := range s.Envoys {
		for _, typeURL := range s.requiredTypes() {
			if want := s.TypeVersion(typeURL); e.Types[typeURL].Acked != want {
				return false, ReasonPending, fmt.Sprintf("waiting for Envoy %s to accept the %s configuration version %s (%s)",
					e.NodeID, kind(typeURL), want, e.Types[typeURL].progress(want))
			}
		}
	}
	return true, ReasonProgrammed, fmt.Sprintf("%d Envoy(s) run configuration version %s", len(s.Envoys), s.Version)
}

// progress says how far the exchange of version want got with one Envoy: whether the
// server sent it (if not, the server waits for Envoy's request; if so, Envoy has it and
// has not answered) and what Envoy runs meanwhile. A Programmed condition that stays
// Pending then tells which side to look at. No time in it: the message is part of the
// Gateway's status, written again only when it changes.
func (t TypeStatus) progress(want string) string {
	sent := "not sent yet"
	if t.Sent == want {
		sent = "sent, not answered yet"
	}
	runs := "it runs none yet"
	if t.Acked != "" {
		runs = "it runs version " + t.Acked
	}
	return sent + "; " + runs
}

// TypeVersion is the published version of typeURL (Version when the status does not
// say).
func (s GatewayStatus) TypeVersion(typeURL string) string {
	if v, ok := s.TypeVersions[typeURL]; ok {
		return v
	}
	return s.Version
}

// rejection finds a NACK of the published version of its type, on a connected Envoy or
// recorded for the Gateway.
func (s GatewayStatus) rejection() (*Nack, string) {
	for _, e := range s.Envoys {
		if nack, typeURL := s.nackOf(e.Types); nack != nil {
			return nack, typeURL
		}
	}
	return s.nackOf(s.Types)
}

func (s GatewayStatus) nackOf(types map[string]TypeStatus) (*Nack, string) {
	if s.Version == "" {
		return nil, ""
	}
	for _, typeURL := range slices.Sorted(maps.Keys(types)) {
		if n := types[typeURL].Nack; n != nil && n.Version == s.TypeVersion(typeURL) {
			return n, typeURL
		}
	}
	return nil, ""
}

// requiredTypes are the types every Envoy must have accepted: listeners and clusters
// (always subscribed) and the types the snapshot has resources of. Envoy subscribes to
// each such type because the snapshot is consistent (every route, endpoint and secret
// is referenced).
func (s GatewayStatus) requiredTypes() []string {
	required := []string{resource.ClusterType, resource.ListenerType}
	for _, typeURL := range slices.Sorted(maps.Keys(s.Resources)) {
		if s.Resources[typeURL] > 0 && !slices.Contains(required, typeURL) {
			required = append(required, typeURL)
		}
	}
	return required
}

// kind is the short message name of a type URL, e.g. "RouteConfiguration".
func kind(typeURL string) string {
	return typeURL[strings.LastIndex(typeURL, ".")+1:]
}

// Status returns what the server knows about gateway; the zero status (with Gateway
// set) when it knows nothing.
func (s *Server) Status(gateway string) GatewayStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := GatewayStatus{Gateway: gateway}
	g := s.gateways[gateway]
	if g == nil {
		return out
	}
	out.Version = g.version
	out.TypeVersions = maps.Clone(g.typeVersions)
	out.history = slices.Clip(g.history) // entries are never modified
	out.Resources = maps.Clone(g.resources)
	out.Types = copyTypes(g.types)
	for _, st := range g.streams {
		out.Envoys = append(out.Envoys, EnvoyStatus{
			NodeID:      st.nodeID,
			StreamID:    st.id,
			ConnectedAt: st.connectedAt,
			Types:       copyTypes(st.types),
		})
	}
	slices.SortFunc(out.Envoys, func(a, b EnvoyStatus) int {
		return cmp.Or(cmp.Compare(a.NodeID, b.NodeID), cmp.Compare(a.StreamID, b.StreamID))
	})
	return out
}

func copyTypes(in map[string]*typeState) map[string]TypeStatus {
	out := make(map[string]TypeStatus, len(in))
	for typeURL, t := range in {
		ts := t.TypeStatus
		if ts.Nack != nil {
			nack := *ts.Nack
			ts.Nack = &nack
		}
		if t.delta != nil {
			ts.Mirror = &MirrorStatus{Held: len(t.delta.held), InFlight: len(t.delta.inFlight), Unsure: t.delta.unsure}
		}
		out[typeURL] = ts
	}
	return out
}
