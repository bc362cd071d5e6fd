package xds

import (
	"errors"
	"maps"
	"sort"
	"sync"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// A snapshot indexes each type's resources by name. go-control-plane's NewSnapshot
// builds those maps from nothing, by asking every resource its name: at 30,000
// Backends that was 13 ms and 3 MB of each one-Backend change. Publish builds them from
// the last snapshot's maps instead, the way it versions resources
// (resource_versions.go): a copy with the removed names deleted and the names whose
// resource is not the last snapshot's very message set again. A snapshot's maps are
// never modified once made (go-control-plane only reads them), so a type with nothing
// removed or set shares the last snapshot's map.

// indexItems sets a's per-type name indexes from prev's (nil: from nothing).
func (a *analysis) indexItems(prev *analysis) {
	a.plain = make(map[string]map[string]types.Resource, len(a.types))
	for i := range a.types {
		st := &a.types[i]
		base := prev.plainOf(st.typeURL)
		if base == nil {
			a.plain[st.typeURL] = indexSorted(st)
			continue
		}
		dirty, removed := changedNames(st, prev.ofType(st.typeURL), false)
		a.plain[st.typeURL] = patchIndex(base, st, dirty, removed)
	}
}

// patchIndex is base with the removed names deleted and the dirty ones set from st; base
// itself when there are none.
func patchIndex(base map[string]types.Resource, st *sorted, dirty, removed []string) map[string]types.Resource {
	if len(dirty) == 0 && len(removed) == 0 {
		return base
	}
	out := maps.Clone(base)
	for _, name := range removed {
		delete(out, name)
	}
	for _, name := range dirty {
		out[name] = st.served(st.index(name))
	}
	return out
}

// plainOf is prev's index of typeURL without TTLs, or nil.
func (a *analysis) plainOf(typeURL string) map[string]types.Resource {
	if a == nil {
		return nil
	}
	return a.plain[typeURL]
}

// publishedItems is a's index (nil when a is).
func (a *analysis) publishedItems() map[string]map[string]types.Resource {
	if a == nil {
		return nil
	}
	return a.plain
}

// indexSorted is st's resources by name.
func indexSorted(st *sorted) map[string]types.Resource {
	items := make(map[string]types.Resource, len(st.names))
	for i, name := range st.names {
		items[name] = st.served(i)
	}
	return items
}

// served is the form of resource i go-control-plane is given to serve: its wire form if
// it has one (a route table), else the resource.
func (st *sorted) served(i int) types.Resource {
	if f := st.facts[i]; f != nil && f.wire != nil {
		return f.wire
	}
	return st.items[i]
}

// index is the position of a name st has (its names are sorted).
func (st *sorted) index(name string) int {
	return sort.SearchStrings(st.names, name)
}

// servedSnapshot is the snapshot go-control-plane serves. It answers GetResources with
// the analysis's index instead of a new map: go-control-plane asks for one each time an
// incremental stream sends a request and each time a snapshot is published to it, a
// copy of every resource's name at 10,000 Backends (and 1.2 MB) each time. Like the
// other index, go-control-plane only reads it.
//
// The index with TTLs (GetResourcesAndTTL) is only read for state-of-the-world streams,
// which Portcullis's Envoys do not open (their bootstrap asks for incremental xDS): it
// is made from the plain index when first asked for, once per type, instead of on every
// publish (at 10,000 Backends, a copy of 600 KB for each changed type).
type servedSnapshot struct {
	*cachev3.Snapshot
	plain map[string]map[string]types.Resource
	// changes are the last step of each type's version history (delta_cache.go).
	changes map[string]*versionChange

	ttlMu sync.Mutex
	ttl   map[string]map[string]types.ResourceWithTTL
}

// GetResources returns the snapshot's resources of typeURL by name; the map is shared.
func (s *servedSnapshot) GetResources(typeURL string) map[string]types.Resource {
	return s.plain[typeURL]
}

// GetResourcesAndTTL returns the snapshot's resources of typeURL by name, each without
// a TTL; the map is made on the first call for typeURL and shared after.
func (s *servedSnapshot) GetResourcesAndTTL(typeURL string) map[string]types.ResourceWithTTL {
	plain, ok := s.plain[typeURL]
	if !ok {
		return nil
	}
	s.ttlMu.Lock()
	defer s.ttlMu.Unlock()
	if items, ok := s.ttl[typeURL]; ok {
		return items
	}
	items := make(map[string]types.ResourceWithTTL, len(plain))
	for name, r := range plain {
		items[name] = types.ResourceWithTTL{Resource: r}
	}
	if s.ttl == nil {
		s.ttl = map[string]map[string]types.ResourceWithTTL{}
	}
	s.ttl[typeURL] = items
	return items
}

// snapshot is a's resources as a snapshot whose types have the given versions. The
// embedded Snapshot has each type's version but no Items: servedSnapshot's methods
// answer every question about the resources themselves.
func (a *analysis) snapshot(typeVersions map[string]string) (*servedSnapshot, error) {
	snapshot := &servedSnapshot{Snapshot: &cachev3.Snapshot{}, plain: a.plain, changes: make(map[string]*versionChange, len(a.resources))}
	for typeURL, r := range a.resources {
		snapshot.changes[typeURL] = r.change
	}
	for typeURL := range a.plain {
		idx := cachev3.GetResponseType(typeURL)
		if idx == types.UnknownType {
			return nil, errors.New("unknown resource type " + typeURL)
		}
		snapshot.Resources[idx] = cachev3.Resources{Version: typeVersions[typeURL]}
	}
	return snapshot, nil
}
