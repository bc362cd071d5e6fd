package xds

import (
	"context"
	"fmt"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

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

	byType := res.ByType()
	analysis, err := analyze(byType, s.memos[gateway])
	if err != nil {
		return "", false, fmt.Errorf("xds: publish %s: %w", gateway, err)
	}
	version = analysis.version()
	if s.publishedVersion(gateway) == version {
		s.memos[gateway] = analysis
		return version, false, nil
	}
	snapshot, err := cachev3.NewSnapshot(version, byType)
	if err != nil {
		return "", false, fmt.Errorf("xds: publish %s: %w", gateway, err)
	}
	if !analysis.sameReferences(s.memos[gateway]) {
		if err := consistent(snapshot, analysis.secretRefs()); err != nil {
			return "", false, fmt.Errorf("xds: publish %s: inconsistent snapshot, the last one stays: %w", gateway, err)
		}
	}
	if err := s.cache.SetSnapshot(context.Background(), gateway, snapshot); err != nil {
		return "", false, fmt.Errorf("xds: publish %s: %w", gateway, err)
	}
	s.memos[gateway] = analysis
	counts := resourceCounts(byType)
	s.setPublished(gateway, version, counts)
	s.log.V(1).Info("published snapshot", "gateway", gateway, "version", version, "resources", counts)
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
	g.version, g.resources, g.types = "", nil, map[string]*typeState{}
	s.forgetIfIdleLocked(gateway)
	s.changes.mark(gateway)
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

func (s *Server) setPublished(gateway, version string, counts map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gatewayLocked(gateway)
	g.version, g.resources = version, counts
	s.changes.mark(gateway)
}

func resourceCounts(byType map[string][]types.Resource) map[string]int {
	counts := make(map[string]int, len(byType))
	for typeURL, rs := range byType {
		counts[typeURL] = len(rs)
	}
	return counts
}
