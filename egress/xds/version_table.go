package xds

import "maps"

// A salted type's versions, and every endpoints version (it carries its clusters'),
// are kept by name (typeResources.byName). Copying that map with a few names patched on
// every publish was 0.55 MB of each one-Backend change at 10,000 Backends
// (BenchmarkPublish10000, 2026-12-03), for an endpoints version that changed with its
// cluster. A versionTable shares the last table's map and keeps the names changed
// since in a small map of its own, copied on each publish; once that holds more than
// editLimit names, the next publish makes one map of both again.

// versionTable is versions by name; shared between analyses and never modified.
type versionTable struct {
	// flat is the versions when the table was last made whole.
	flat map[string]string
	// edits are the names set or removed since.
	edits map[string]versionEdit
}

// versionEdit is a name's version set since flat was made, or its removal.
type versionEdit struct {
	version string
	gone    bool
}

// editLimit is the most edits a table of n flat versions keeps: an eighth of them, at
// most 256 (a copy of 256 edits is some 20 KB; making 10,000 versions whole again, 0.55
// MB, once in 256 publishes).
func editLimit(n int) int {
	return min(n/8, 256)
}

// get is name's version.
func (t *versionTable) get(name string) (string, bool) {
	if t == nil {
		return "", false
	}
	if e, ok := t.edits[name]; ok {
		return e.version, !e.gone
	}
	v, ok := t.flat[name]
	return v, ok
}

// all is every version in one new map.
func (t *versionTable) all() map[string]string {
	if t == nil {
		return map[string]string{}
	}
	out := maps.Clone(t.flat)
	if out == nil {
		out = make(map[string]string, len(t.edits))
	}
	for name, e := range t.edits {
		if e.gone {
			delete(out, name)
		} else {
			out[name] = e.version
		}
	}
	return out
}

// patched is t (nil: empty) without removed and with version(name) for every dirty name
// that has one (a cluster's endpoints may be missing: the snapshot's consistency check
// refuses that later). t stays as it was.
func (t *versionTable) patched(removed, dirty []string, version func(string) (string, bool)) *versionTable {
	if t == nil || len(t.edits)+len(removed)+len(dirty) > editLimit(len(t.flat)) {
		out := t.all()
		for _, name := range removed {
			delete(out, name)
		}
		for _, name := range dirty {
			if v, ok := version(name); ok {
				out[name] = v
			}
		}
		return &versionTable{flat: out}
	}
	edits := make(map[string]versionEdit, len(t.edits)+len(removed)+len(dirty))
	maps.Copy(edits, t.edits)
	for _, name := range removed {
		if _, ok := t.flat[name]; ok {
			edits[name] = versionEdit{gone: true}
		} else {
			delete(edits, name)
		}
	}
	for _, name := range dirty {
		if v, ok := version(name); ok {
			edits[name] = versionEdit{version: v}
		}
	}
	return &versionTable{flat: t.flat, edits: edits}
}
