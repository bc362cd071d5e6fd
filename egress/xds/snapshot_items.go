package xds

import (
	"errors"
	"slices"
	"sync"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// A snapshot answers by name from its analysis. go-control-plane's NewSnapshot indexes
// each type's resources in a map by asking every resource its name, and its delta
// server reads per-name versions from another map: at 10,000 Backends each map is some
// 0.3-0.6 MB, and patching copies of them on every one-Backend change was 1.6 MB of
// the change's allocation in the manager (2026-12-03). The analysis already holds each
// type's resources sorted by name with their versions (analyze.go, resource_versions.go),
// so the served snapshot answers from it: a binary search for a name, a walk in name
// order for all of them. Only the methods of go-control-plane's interface that hand out
// maps (GetResources, GetResourcesAndTTL, GetVersionMap) make them, on the first call
// for a type, and keep them; the delta cache, which serves Portcullis's Envoys, never
// calls them.

// typeItems is one type of a snapshot as a delta response reads it: each resource and
// its version by name.
type typeItems interface {
	// lookup is the resource named name and its version.
	lookup(name string) (r types.Resource, version string, ok bool)
	// each calls yield with every resource's name and version.
	each(yield func(name, version string))
	size() int
}

// sortedItems are one type of an analysis: the resources of st with the versions of r.
type sortedItems struct {
	st *sorted
	r  *typeResources
}

func (s sortedItems) lookup(name string) (types.Resource, string, bool) {
	if s.st == nil {
		return nil, "", false
	}
	i, ok := slices.BinarySearch(s.st.names, name)
	if !ok {
		return nil, "", false
	}
	return s.st.served(i), s.r.versionAt(s.st, i), true
}

func (s sortedItems) each(yield func(name, version string)) {
	if s.st == nil {
		return
	}
	for i, name := range s.st.names {
		yield(name, s.r.versionAt(s.st, i))
	}
}

func (s sortedItems) size() int {
	if s.st == nil {
		return 0
	}
	return len(s.st.names)
}

// mapItems are one type of any other snapshot (a resend's): go-control-plane's maps.
type mapItems struct {
	resources map[string]types.Resource
	versions  map[string]string
}

func (m mapItems) lookup(name string) (types.Resource, string, bool) {
	r, ok := m.resources[name]
	return r, m.versions[name], ok
}

func (m mapItems) each(yield func(name, version string)) {
	for name := range m.resources {
		yield(name, m.versions[name])
	}
}

func (m mapItems) size() int { return len(m.resources) }

// itemsOf is typeURL's resources in snap, answered from the analysis when snap is a
// servedSnapshot.
func itemsOf(snap cachev3.ResourceSnapshot, typeURL string) typeItems {
	if served, ok := snap.(*servedSnapshot); ok {
		return served.items(typeURL)
	}
	in := mapItems{resources: snap.GetResources(typeURL), versions: snap.GetVersionMap(typeURL)}
	if in.versions == nil && len(in.resources) > 0 {
		if err := snap.ConstructVersionMap(); err == nil {
			in.versions = snap.GetVersionMap(typeURL)
		}
	}
	return in
}

// served is the form of resource i go-control-plane is given to serve: its wire form if
// it has one (a route table), else the resource.
func (st *sorted) served(i int) types.Resource {
	if f := st.facts[i]; f != nil && f.wire != nil {
		return f.wire
	}
	return st.items[i]
}

// servedSnapshot is the snapshot go-control-plane serves: each type's resources and
// versions are those of the analysis it was published from, which stays as it is (a
// later Publish makes a new one). The embedded Snapshot has each type's version but no
// Items and no VersionMap.
//
// The index with TTLs (GetResourcesAndTTL) is only read for state-of-the-world streams,
// which Portcullis's Envoys do not open (their bootstrap asks for incremental xDS).
type servedSnapshot struct {
	*cachev3.Snapshot
	types map[string]sortedItems
	// changes are the last step of each type's version history (delta_cache.go).
	changes map[string]*versionChange

	mapsMu   sync.Mutex
	plain    map[string]map[string]types.Resource
	ttl      map[string]map[string]types.ResourceWithTTL
	versions map[string]map[string]string
}

// items is typeURL's resources; none when the snapshot has no such type.
func (s *servedSnapshot) items(typeURL string) typeItems {
	return s.types[typeURL]
}

// GetResources returns the snapshot's resources of typeURL by name; the map is made on
// the first call for typeURL and shared after.
func (s *servedSnapshot) GetResources(typeURL string) map[string]types.Resource {
	items, ok := s.types[typeURL]
	if !ok {
		return nil
	}
	return madeOnce(&s.mapsMu, &s.plain, typeURL, func() map[string]types.Resource {
		out := make(map[string]types.Resource, items.size())
		for i, name := range items.st.names {
			out[name] = items.st.served(i)
		}
		return out
	})
}

// GetResourcesAndTTL returns the snapshot's resources of typeURL by name, each without
// a TTL; the map is made on the first call for typeURL and shared after.
func (s *servedSnapshot) GetResourcesAndTTL(typeURL string) map[string]types.ResourceWithTTL {
	plain := s.GetResources(typeURL)
	if plain == nil {
		return nil
	}
	return madeOnce(&s.mapsMu, &s.ttl, typeURL, func() map[string]types.ResourceWithTTL {
		out := make(map[string]types.ResourceWithTTL, len(plain))
		for name, r := range plain {
			out[name] = types.ResourceWithTTL{Resource: r}
		}
		return out
	})
}

// GetVersionMap returns the versions of typeURL's resources by name; the map is made on
// the first call for typeURL and shared after.
func (s *servedSnapshot) GetVersionMap(typeURL string) map[string]string {
	items, ok := s.types[typeURL]
	if !ok {
		return nil
	}
	return madeOnce(&s.mapsMu, &s.versions, typeURL, func() map[string]string {
		out := make(map[string]string, items.size())
		items.each(func(name, version string) { out[name] = version })
		return out
	})
}

// ConstructVersionMap does nothing: the versions are the analysis's (GetVersionMap).
func (s *servedSnapshot) ConstructVersionMap() error { return nil }

// madeOnce returns (*maps)[key], made by build and kept on the first call.
func madeOnce[V any](mu *sync.Mutex, maps *map[string]V, key string, build func() V) V {
	mu.Lock()
	defer mu.Unlock()
	if v, ok := (*maps)[key]; ok {
		return v
	}
	if *maps == nil {
		*maps = map[string]V{}
	}
	v := build()
	(*maps)[key] = v
	return v
}

// snapshot is a's resources as a snapshot whose types have the given versions.
func (a *analysis) snapshot(typeVersions map[string]string) (*servedSnapshot, error) {
	snapshot := &servedSnapshot{Snapshot: &cachev3.Snapshot{}, types: make(map[string]sortedItems, len(a.types)), changes: make(map[string]*versionChange, len(a.resources))}
	for typeURL, r := range a.resources {
		snapshot.changes[typeURL] = r.change
	}
	for i := range a.types {
		st := &a.types[i]
		idx := cachev3.GetResponseType(st.typeURL)
		if idx == types.UnknownType {
			return nil, errors.New("unknown resource type " + st.typeURL)
		}
		snapshot.Resources[idx] = cachev3.Resources{Version: typeVersions[st.typeURL]}
		snapshot.types[st.typeURL] = sortedItems{st: st, r: a.resources[st.typeURL]}
	}
	return snapshot, nil
}
