package xds

import (
	"crypto/sha256"
	"maps"
	"strconv"
	"strings"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// Per-resource versions. An incremental (delta) stream sends a resource when its
// version differs from the one Envoy holds, so every resource of a snapshot has one:
// the hex SHA-256 of its deterministic encoding, which is what go-control-plane puts on
// the wire and Envoy reports when it reconnects. The server has that digest already
// (analyze.go; free for resources the build cache reused), so go-control-plane need not
// marshal and hash every resource of every new snapshot to find the versions.
//
// An updated EDS cluster is warmed anew, and over an incremental stream Envoy waits for
// its endpoints to be sent again (up to the 15 s initial fetch timeout, serving with the
// old cluster meanwhile); a delta server sends only what changed. So go-control-plane's
// version of an endpoints resource also carries the digests of the clusters that fetch
// it: a changed cluster sends its endpoints along, as state-of-the-world ADS does.
//
// A salt after the digest makes every resource of a type look new to go-control-plane,
// so that the next snapshot sends all of them again: after a NACK (the server cannot
// tell which of the rejected resources Envoy applied) and for Resend. The wire keeps
// the digest alone.

// typeResources are the versions of the resources of one type.
type typeResources struct {
	// digest and salt are those the versions were made from; for endpoints, fetchers
	// are the versions of the clusters too.
	digest   [sha256.Size]byte
	salt     int
	fetchers *typeResources
	// byName maps each resource's name to its salted version, for go-control-plane;
	// content maps it to its digest, the version on the wire. Both are shared with
	// snapshots and later analyses and never modified; they are one map without a salt.
	byName, content map[string]string
}

// versionResources gives a's resources their versions under salts (per type URL). A
// type with prev's digest and salt keeps prev's versions.
func (a *analysis) versionResources(prev *analysis, salts map[string]int) {
	a.resources = make(map[string]*typeResources, len(a.types))
	for _, st := range a.types {
		digest, salt := a.digests[st.typeURL], salts[st.typeURL]
		var fetchers *typeResources
		if st.typeURL == resource.EndpointType {
			fetchers = a.resources[resource.ClusterType] // type URLs sort clusters first
		}
		if p := prev.resourcesOf(st.typeURL); p != nil && p.digest == digest && p.fetchers == fetchers && p.salt == salt {
			a.resources[st.typeURL] = p
			continue
		}
		content := make(map[string]string, len(st.names))
		for i, name := range st.names {
			content[name] = st.facts[i].version
		}
		byName := salted(content, salt)
		if fetchers != nil {
			byName = withFetchers(byName, a.ofType(resource.ClusterType), fetchers)
		}
		a.resources[st.typeURL] = &typeResources{digest: digest, fetchers: fetchers, salt: salt, byName: byName, content: content}
	}
}

// withFetchers appends to the version of each endpoints resource the versions (salt
// included) of the clusters that reference it.
func withFetchers(endpoints map[string]string, clusters *sorted, versions *typeResources) map[string]string {
	out := maps.Clone(endpoints)
	for i, f := range clusters.facts {
		for _, ref := range f.refs {
			name, ok := strings.CutPrefix(ref, resource.EndpointType+" ")
			if _, known := out[name]; ok && known {
				out[name] += "/" + versions.byName[clusters.names[i]]
			}
		}
	}
	return out
}

func (a *analysis) resourcesOf(typeURL string) *typeResources {
	if a == nil {
		return nil
	}
	return a.resources[typeURL]
}

// salted is content with salt after every version; content itself without one.
func salted(content map[string]string, salt int) map[string]string {
	if salt == 0 {
		return content
	}
	out := make(map[string]string, len(content))
	suffix := "." + strconv.Itoa(salt)
	for name, v := range content {
		out[name] = v + suffix
	}
	return out
}

// versionMap is the snapshot's VersionMap: versions by type URL and name.
func (a *analysis) versionMap() map[string]map[string]string {
	out := make(map[string]map[string]string, len(a.resources))
	for typeURL, r := range a.resources {
		out[typeURL] = r.byName
	}
	return out
}

// contentMap is the version on the wire of every resource, by type URL and name.
func (a *analysis) contentMap() map[string]map[string]string {
	out := make(map[string]map[string]string, len(a.resources))
	for typeURL, r := range a.resources {
		out[typeURL] = r.content
	}
	return out
}

// saltsLocked copies the salts the next snapshot of gateway takes. s.mu must be held.
func (s *Server) saltsLocked(gateway string) map[string]int {
	if g := s.gateways[gateway]; g != nil {
		return maps.Clone(g.salts)
	}
	return nil
}
