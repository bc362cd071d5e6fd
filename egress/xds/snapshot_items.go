package xds

import (
	"errors"
	"maps"
	"sort"

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
	a.items = make(map[string]map[string]types.ResourceWithTTL, len(a.types))
	a.plain = make(map[string]map[string]types.Resource, len(a.types))
	for i := range a.types {
		st := &a.types[i]
		base, basePlain := prev.itemsOf(st.typeURL), prev.plainOf(st.typeURL)
		if base == nil || basePlain == nil {
			a.items[st.typeURL] = indexSorted(st, func(r types.Resource) types.ResourceWithTTL { return types.ResourceWithTTL{Resource: r} })
			a.plain[st.typeURL] = indexSorted(st, func(r types.Resource) types.Resource { return r })
			continue
		}
		dirty, removed := changedNames(st, prev.ofType(st.typeURL), false)
		a.items[st.typeURL] = patchIndex(base, st, dirty, removed, func(r types.Resource) types.ResourceWithTTL { return types.ResourceWithTTL{Resource: r} })
		a.plain[st.typeURL] = patchIndex(basePlain, st, dirty, removed, func(r types.Resource) types.Resource { return r })
	}
}

// patchIndex is base with the removed names deleted and the dirty ones set from st; base
// itself when there are none.
func patchIndex[V any](base map[string]V, st *sorted, dirty, removed []string, value func(types.Resource) V) map[string]V {
	if len(dirty) == 0 && len(removed) == 0 {
		return base
	}
	out := maps.Clone(base)
	for _, name := range removed {
		delete(out, name)
	}
	for _, name := range dirty {
		out[name] = value(st.served(st.index(name)))
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

// publishedItems are a's indexes (nil when a is).
func (a *analysis) publishedItems() (map[string]map[string]types.ResourceWithTTL, map[string]map[string]types.Resource) {
	if a == nil {
		return nil, nil
	}
	return a.items, a.plain
}

func (a *analysis) itemsOf(typeURL string) map[string]types.ResourceWithTTL {
	if a == nil {
		return nil
	}
	return a.items[typeURL]
}

// indexSorted is st's resources by name.
func indexSorted[V any](st *sorted, value func(types.Resource) V) map[string]V {
	items := make(map[string]V, len(st.names))
	for i, name := range st.names {
		items[name] = value(st.served(i))
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
type servedSnapshot struct {
	*cachev3.Snapshot
	plain map[string]map[string]types.Resource
	// changes are the last step of each type's version history (delta_cache.go).
	changes map[string]*versionChange
}

// GetResources returns the snapshot's resources of typeURL by name; the map is shared.
func (s *servedSnapshot) GetResources(typeURL string) map[string]types.Resource {
	return s.plain[typeURL]
}

// snapshot is a's resources as a snapshot whose types have the given versions.
func (a *analysis) snapshot(typeVersions map[string]string) (*servedSnapshot, error) {
	snapshot := &servedSnapshot{Snapshot: &cachev3.Snapshot{}, plain: a.plain, changes: make(map[string]*versionChange, len(a.resources))}
	for typeURL, r := range a.resources {
		snapshot.changes[typeURL] = r.change
	}
	for typeURL, items := range a.items {
		idx := cachev3.GetResponseType(typeURL)
		if idx == types.UnknownType {
			return nil, errors.New("unknown resource type " + typeURL)
		}
		snapshot.Resources[idx] = cachev3.Resources{Version: typeVersions[typeURL], Items: items}
	}
	return snapshot, nil
}
