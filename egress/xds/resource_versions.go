package xds

import (
	"crypto/sha256"
	"maps"
	"slices"
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
// it: a changed cluster sends its endpoints along, as state-of-the-world ADS does. That
// alone does not put them after the cluster on the stream; endpoints_due.go does.
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
	// byName maps each resource's name to its version when that is not the resource's
	// digest (keepsMap: a salt, or fetchers); shared with snapshots and later analyses
	// and never modified. A type without either has no map: its versions are the
	// digests the analysis holds (versionAt), and a copy of such a map was 0.55 MB of
	// each change at 10,000 Backends.
	byName *versionTable
	// held is the set digest of the versions on the wire (heldSet): what an Envoy
	// holding exactly these resources has (delta.go).
	held heldSet
	// change names the resources whose byName version may differ from the versions
	// these were made from (delta_cache.go).
	change *versionChange
}

// versionResources gives a's resources their versions under salts (per type URL). A
// type with prev's digest, salt and fetchers keeps prev's versions; a changed type
// starts from prev's and recomputes only the versions of the resources that are not
// prev's very messages (and, for endpoints, of those whose clusters changed), so that
// one change among ten thousand costs a copy of the maps, not ten thousand versions.
func (a *analysis) versionResources(prev *analysis, salts map[string]int) {
	a.resources = make(map[string]*typeResources, len(a.types))
	for i := range a.types {
		st := &a.types[i]
		digest, salt := a.digests[st.typeURL], salts[st.typeURL]
		var fetchers *typeResources
		if st.typeURL == resource.EndpointType {
			fetchers = a.resources[resource.ClusterType] // type URLs sort clusters first
		}
		p := prev.resourcesOf(st.typeURL)
		if p != nil && p.digest == digest && p.fetchers == fetchers && p.salt == salt {
			a.resources[st.typeURL] = p
			continue
		}
		if p != nil && (p.salt != salt || (p.fetchers == nil) != (fetchers == nil) || (fetchers != nil && p.fetchers.salt != fetchers.salt)) {
			p = nil // every version changes
		}
		dirty, removed := changedNames(st, prev.ofType(st.typeURL), p == nil)
		if fetchers != nil && p != nil {
			fetched, _ := changedNames(a.ofType(resource.ClusterType), prev.ofType(resource.ClusterType), false)
			dirty = append(dirty, fetchedBy(a.ofType(resource.ClusterType), prev.ofType(resource.ClusterType), fetched)...)
		}
		a.resources[st.typeURL] = versioned(st, prev.ofType(st.typeURL), p, a.ofType(resource.ClusterType), fetchers, salt, digest, dirty, removed)
	}
}

// versioned is the versions of st: base's (nil: none; made from was, the last
// analysis of st's type) with removed names deleted and dirty ones computed again.
func versioned(st, was *sorted, base *typeResources, clusters *sorted, fetchers *typeResources, salt int, digest [sha256.Size]byte, dirty, removed []string) *typeResources {
	r := &typeResources{digest: digest, salt: salt, fetchers: fetchers, change: nextChange(base, dirty, removed)}
	if base != nil {
		r.held = base.held.changed(was.versionOf, st.versionOf, removed, dirty)
	} else {
		r.held = st.heldSet()
	}
	if !r.keepsMap() {
		return r
	}
	var fetchedBy map[string][]string
	if fetchers != nil {
		fetchedBy = fetchersOf(clusters, dirty)
	}
	r.byName = base.table().patched(removed, dirty, func(name string) (string, bool) {
		v, ok := st.versionOf(name)
		if !ok {
			return "", false
		}
		v = saltedVersion(v, salt)
		for _, cluster := range fetchedBy[name] {
			cv, _ := fetchers.versionNamed(clusters, cluster)
			v += "/" + cv
		}
		return v, true
	})
	return r
}

func (r *typeResources) table() *versionTable {
	if r == nil {
		return nil
	}
	return r.byName
}

// keepsMap tells whether r's versions are other than the resources' digests, and kept
// in byName.
func (r *typeResources) keepsMap() bool {
	return r.salt != 0 || r.fetchers != nil
}

// versionAt is the version of st's resource i, st being the resources r versions.
func (r *typeResources) versionAt(st *sorted, i int) string {
	if r != nil && r.keepsMap() {
		v, _ := r.byName.get(st.names[i])
		return v
	}
	return st.facts[i].version
}

// versionNamed is the version of st's resource name, st being the resources r
// versions.
func (r *typeResources) versionNamed(st *sorted, name string) (string, bool) {
	if r != nil && r.keepsMap() {
		return r.byName.get(name)
	}
	return st.versionOf(name)
}

// changedNames walks the name-ordered resources of st and prev side by side: dirty are
// the names of st that are new or not prev's very message (all of them with all),
// removed the names of prev that st lacks.
func changedNames(st, prev *sorted, all bool) (dirty, removed []string) {
	if st == nil {
		st = &sorted{}
	}
	if prev == nil || all {
		if prev != nil {
			removed = slices.Clone(prev.names)
		}
		return slices.Clone(st.names), removed
	}
	i, j := 0, 0
	for i < len(st.names) || j < len(prev.names) {
		switch {
		case j == len(prev.names) || (i < len(st.names) && st.names[i] < prev.names[j]):
			dirty = append(dirty, st.names[i])
			i++
		case i == len(st.names) || prev.names[j] < st.names[i]:
			removed = append(removed, prev.names[j])
			j++
		default:
			if st.items[i] != prev.items[j] && st.facts[i] != prev.facts[j] {
				dirty = append(dirty, st.names[i])
			}
			i++
			j++
		}
	}
	return dirty, removed
}

// fetchedBy lists the endpoints the named clusters (of now or of prev) reference.
func fetchedBy(now, prev *sorted, clusters []string) []string {
	var out []string
	for _, s := range []*sorted{now, prev} {
		for _, name := range clusters {
			out = append(out, s.endpointRefs(name)...)
		}
	}
	return out
}

// fetchersOf maps each of the endpoints names to the clusters that reference it.
func fetchersOf(clusters *sorted, names []string) map[string][]string {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	out := map[string][]string{}
	if clusters == nil {
		return out
	}
	for i, f := range clusters.facts {
		for _, ref := range f.refs {
			if name, ok := endpointRef(ref); ok && want[name] {
				out[name] = append(out[name], clusters.names[i])
			}
		}
	}
	return out
}

// endpointRefs are the endpoints the cluster named name references; none when there
// is no such cluster.
func (st *sorted) endpointRefs(name string) []string {
	if st == nil {
		return nil
	}
	i, ok := slices.BinarySearch(st.names, name)
	if !ok {
		return nil
	}
	var out []string
	for _, ref := range st.facts[i].refs {
		if n, ok := endpointRef(ref); ok {
			out = append(out, n)
		}
	}
	return out
}

// endpointRef is the name of the endpoints a reference (analyze.go: "<type URL> <name>")
// names, if it names endpoints.
func endpointRef(ref string) (string, bool) {
	return strings.CutPrefix(ref, resource.EndpointType+" ")
}

// versionOf is the content version of the resource named name, if there is one.
func (st *sorted) versionOf(name string) (string, bool) {
	if st == nil {
		return "", false
	}
	i, ok := slices.BinarySearch(st.names, name)
	if !ok {
		return "", false
	}
	return st.facts[i].version, true
}

func (a *analysis) resourcesOf(typeURL string) *typeResources {
	if a == nil {
		return nil
	}
	return a.resources[typeURL]
}

func saltedVersion(version string, salt int) string {
	if salt == 0 {
		return version
	}
	return version + "." + strconv.Itoa(salt)
}

// versionMap is a's versions by type URL and name, for a snapshot of go-control-plane's
// (a resend's).
func (a *analysis) versionMap() map[string]map[string]string {
	out := make(map[string]map[string]string, len(a.resources))
	for typeURL, r := range a.resources {
		if r.keepsMap() {
			out[typeURL] = r.byName.all()
			continue
		}
		m := map[string]string{}
		sortedItems{st: a.ofType(typeURL), r: r}.each(func(name, version string) { m[name] = version })
		out[typeURL] = m
	}
	return out
}

// heldSets are what an Envoy holding exactly a's resources has, by type URL.
func (a *analysis) heldSets() map[string]heldSet {
	out := make(map[string]heldSet, len(a.resources))
	for typeURL, r := range a.resources {
		out[typeURL] = r.held
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
