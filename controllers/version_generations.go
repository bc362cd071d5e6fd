package controllers

import "maps"

// versionGenerations is the generation of every Backend a published version carries, by
// "namespace/name". The version log keeps up to maxVersions versions per Gateway and
// consecutive versions mostly carry the same generations: each version shares its
// predecessor's base map and holds only what differs from it (a Backend added, or at
// another generation). A full map per version came to 25 MB of the manager's live heap
// over the log at 10,000 Backends. Maps are never modified once a version holds them.
type versionGenerations struct {
	base  map[string]int64
	delta map[string]int64 // differs from base; never a Backend base has and the version lacks
	n     int              // how many Backends the version carries
}

// generationsOf is a version's generations from a map of them (a peer's report).
func generationsOf(m map[string]int64) versionGenerations {
	return versionGenerations{base: m, n: len(m)}
}

// get is the Backend's generation, and whether the version carries it.
func (g versionGenerations) get(key string) (int64, bool) {
	if v, ok := g.delta[key]; ok {
		return v, true
	}
	v, ok := g.base[key]
	return v, ok
}

// all is every Backend's generation, as one map (reports to peers, tests).
func (g versionGenerations) all() map[string]int64 {
	if len(g.delta) == 0 {
		return g.base
	}
	out := make(map[string]int64, g.n)
	maps.Copy(out, g.base)
	maps.Copy(out, g.delta)
	return out
}

// maxDelta is how many differing entries a version holds before its generations get a
// base map of their own.
func maxDelta(n int) int { return 16 + n/16 }

// nextGenerations returns the generations of a version that carries the Backends each
// calls with (key, generation), given the last version's (zero: none): the last ones
// themselves when nothing differs, the last base with a larger delta when Backends were
// only added or moved to another generation, and otherwise a new base, made by calling
// each again.
func nextGenerations(last versionGenerations, each func(func(key string, generation int64))) versionGenerations {
	var diff map[string]int64
	n, found := 0, 0
	each(func(key string, generation int64) {
		n++
		if v, ok := last.get(key); ok {
			found++
			if v == generation {
				return
			}
		}
		if diff == nil {
			diff = map[string]int64{}
		}
		diff[key] = generation
	})
	removed := found < last.n
	switch {
	case !removed && len(diff) == 0:
		return last
	case !removed && last.base != nil && len(last.delta)+len(diff) <= maxDelta(n):
		delta := make(map[string]int64, len(last.delta)+len(diff))
		maps.Copy(delta, last.delta)
		maps.Copy(delta, diff)
		return versionGenerations{base: last.base, delta: delta, n: n}
	}
	base := make(map[string]int64, n)
	each(func(key string, generation int64) { base[key] = generation })
	return versionGenerations{base: base, n: n}
}
