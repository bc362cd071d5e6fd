package xds

import (
	"context"
	"fmt"
	"slices"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
)

// Publish makes res the configuration of gateway ("<namespace>/<name>"). The version is
// a hash of the content, so publishing equal resources again, in any order, changes
// nothing (changed is false). An inconsistent snapshot (a reference without its
// resource or a resource nothing references) is refused with an error, and the Envoys
// keep the last snapshot published.
//
// The resources are served as they are, later: they must not be modified after
// Publish. A later Publish may pass the same (unmodified) resources again, which makes
// it cheaper.
func (s *Server) Publish(gateway string, res envoyconfig.Resources) (version string, changed bool, err error) {
	if err := validGateway(gateway); err != nil {
		return "", false, fmt.Errorf("xds: publish: %w", err)
	}
	s.publishMu.Lock()
	defer s.publishMu.Unlock()

	byType := res.ByTypeAgain(s.memos[gateway].itemsOf)
	analysis, err := analyze(byType, s.memos[gateway])
	if err != nil {
		return "", false, fmt.Errorf("xds: publish %s: %w", gateway, err)
	}
	version, analysis.digests = analysis.versions(s.memos[gateway])
	s.mu.Lock()
	salts := s.saltsLocked(gateway)
	s.mu.Unlock()
	analysis.versionResources(s.memos[gateway], salts)
	if s.publishedVersion(gateway) == version {
		analysis.takeRefs(s.memos[gateway])
		s.memos[gateway] = analysis
		return version, false, nil
	}
	typeVersions := s.nextTypeVersions(gateway, version, analysis, s.memos[gateway])
	snapshot, err := analysis.snapshot(typeVersions)
	if err != nil {
		return "", false, fmt.Errorf("xds: publish %s: %w", gateway, err)
	}
	if !analysis.sameReferences(s.memos[gateway]) {
		if err := analysis.checkReferences(s.memos[gateway]); err != nil {
			return "", false, fmt.Errorf("xds: publish %s: inconsistent snapshot, the last one stays: %w", gateway, err)
		}
	}
	if err := s.cache.SetSnapshot(context.Background(), gateway, snapshot); err != nil {
		return "", false, fmt.Errorf("xds: publish %s: %w", gateway, err)
	}
	analysis.takeRefs(s.memos[gateway])
	s.memos[gateway] = analysis
	counts := resourceCounts(byType)
	s.setPublished(gateway, version, typeVersions, counts, analysis)
	s.log.V(1).Info("published snapshot", "gateway", gateway, "version", version, "types", typeVersions, "resources", counts)
	return version, true, nil
}

// Remove forgets gateway's snapshot. Envoys still connected keep running their last
// configuration and get a new one only after they reconnect, so call Remove once the
// Gateway's fleet is gone.
func (s *Server) Remove(gateway string) {
	s.publishMu.Lock()
	defer s.publishMu.Unlock()
	s.cache.ClearSnapshot(gateway)
	delete(s.memos, gateway)
	delete(s.resends, gateway)
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gateways[gateway]
	if g == nil {
		return
	}
	g.version, g.typeVersions, g.history, g.resources, g.types = "", nil, nil, nil, map[string]*typeState{}
	g.heldVersions = nil
	s.forgetIfIdleLocked(gateway)
	s.markNews(gateway)
	s.log.V(1).Info("removed snapshot", "gateway", gateway)
}

func (s *Server) publishedVersion(gateway string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.gateways[gateway]; g != nil {
		return g.version
	}
	return ""
}

// setPublished records the snapshot published for gateway: its versions, its resource
// counts and the versions of its resources (from a).
func (s *Server) setPublished(gateway, version string, typeVersions map[string]string, counts map[string]int, a *analysis) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gatewayLocked(gateway)
	g.version, g.typeVersions, g.resources = version, typeVersions, counts
	g.rememberHeld(typeVersions, a.heldSets())
	g.history = append(g.history, publishedTypes{version: version, types: typeVersions})
	if len(g.history) > maxHistory {
		g.history = slices.Clone(g.history[len(g.history)-maxHistory:])
	}
	s.syncDeltaStreamsLocked(g)
	s.changes.mark(gateway)
}

// Per-type versions. Each type of a snapshot has its own version: a type whose
// resources are those of the Gateway's previous snapshot keeps the version it had, a
// changed type takes the snapshot's (Gateway) version. go-control-plane sends a type
// only when its version differs from the one Envoy runs, so a change of listeners and
// route tables (a pod of a caller starting) does not make Envoy re-apply a thousand
// unchanged clusters.
//
// A type version is always the Gateway version that introduced its content, so the
// Gateway version an Envoy runs can be told from the type versions it acknowledged.

// maxHistory bounds the published versions remembered per Gateway (Running maps a type
// version back to the latest Gateway version that carried it). The controllers remember
// 32.
const maxHistory = 64

// publishedTypes is the version of each type in one published snapshot.
type publishedTypes struct {
	version string
	types   map[string]string
}

// nextTypeVersions gives each type of a new snapshot (version, analysis a) its version:
// the one it has now when its resources equal those of the last snapshot (prev, the
// memo), version otherwise. Endpoints change with clusters: Envoy warms an updated
// cluster until it gets its endpoints again.
func (s *Server) nextTypeVersions(gateway, version string, a, prev *analysis) map[string]string {
	s.mu.Lock()
	var current map[string]string
	if g := s.gateways[gateway]; g != nil {
		current = g.typeVersions
	}
	s.mu.Unlock()
	out := make(map[string]string, len(a.digests))
	for typeURL, digest := range a.digests {
		out[typeURL] = version
		if old, ok := current[typeURL]; ok && old != "" && prev != nil {
			if p, ok := prev.digests[typeURL]; ok && p == digest {
				out[typeURL] = old
			}
		}
	}
	if _, ok := out[resource.EndpointType]; ok && out[resource.ClusterType] == version {
		out[resource.EndpointType] = version
	}
	return out
}

// newSnapshot is a snapshot of byType whose types have the given versions.
func newSnapshot(version string, typeVersions map[string]string, byType map[string][]types.Resource) (*cachev3.Snapshot, error) {
	snapshot, err := cachev3.NewSnapshot(version, byType)
	if err != nil {
		return nil, err
	}
	for typeURL, v := range typeVersions {
		idx := cachev3.GetResponseType(typeURL)
		if idx == types.UnknownType {
			return nil, fmt.Errorf("unknown resource type %s", typeURL)
		}
		snapshot.Resources[idx].Version = v
	}
	return snapshot, nil
}

func resourceCounts(byType map[string][]types.Resource) map[string]int {
	counts := make(map[string]int, len(byType))
	for typeURL, rs := range byType {
		counts[typeURL] = len(rs)
	}
	return counts
}
