package xds

import (
	"context"
	"fmt"
	"strings"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// resendSuffix marks a version that carries the same configuration as the version it
// extends, sent again.
const resendSuffix = "+resend"

// Resend publishes the Gateway's current configuration again under a new version, so
// that every Envoy of the Gateway applies it again. Envoy does not retry a
// configuration it rejected, and the server does not resend a version an Envoy
// rejected (recordNackLocked); a rejection whose cause may go away (a listener port
// another process held) needs a new attempt. It returns the new version.
func (s *Server) Resend(gateway string) (string, error) {
	s.publishMu.Lock()
	defer s.publishMu.Unlock()
	snap, err := s.cache.GetSnapshot(gateway)
	if err != nil {
		return "", fmt.Errorf("xds: resend %s: %w", gateway, err)
	}
	base, _, _ := strings.Cut(s.publishedVersion(gateway), resendSuffix)
	version := fmt.Sprintf("%s%s%d", base, resendSuffix, s.resends[gateway]+1)
	byType := map[resource.Type][]types.Resource{}
	typeVersions := map[string]string{} // every type anew, so that Envoy applies everything again
	for _, typeURL := range []resource.Type{resource.ListenerType, resource.RouteType, resource.ClusterType, resource.EndpointType, resource.SecretType} {
		typeVersions[typeURL], byType[typeURL] = version, []types.Resource{}
		for _, r := range snap.GetResources(typeURL) {
			byType[typeURL] = append(byType[typeURL], r)
		}
	}
	next, err := newSnapshot(version, typeVersions, byType)
	if err != nil {
		return "", fmt.Errorf("xds: resend %s: %w", gateway, err)
	}
	memo := s.resaltLocked(gateway)
	next.VersionMap = memo.versionMap()
	if err := s.cache.SetSnapshot(context.Background(), gateway, next); err != nil {
		return "", fmt.Errorf("xds: resend %s: %w", gateway, err)
	}
	s.resends[gateway]++
	s.news.Add(1) // before setPublished's notice: whoever it wakes reads the count after
	s.mu.Lock()
	g := s.gatewayLocked(gateway)
	counts := g.resources
	s.mu.Unlock()
	s.setPublished(gateway, version, typeVersions, counts, memo)
	return version, nil
}

// resaltLocked gives every type of the Gateway's snapshot a new salt, so that
// incremental streams are sent every resource again, and returns the memo with the new
// versions. s.publishMu must be held.
func (s *Server) resaltLocked(gateway string) *analysis {
	memo := s.memos[gateway]
	if memo == nil {
		memo = &analysis{}
	}
	s.mu.Lock()
	g := s.gatewayLocked(gateway)
	for _, st := range memo.types {
		g.bumpSalt(st.typeURL)
	}
	salts := s.saltsLocked(gateway)
	s.mu.Unlock()
	next := *memo
	next.versionResources(memo, salts)
	s.memos[gateway] = &next
	return &next
}
