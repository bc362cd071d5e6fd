package translate

import (
	"path/filepath"
	"testing"
)

// TestKeptIdentitiesAreTheLastTranslations: the next translation compares Backends by
// place only with the identities of the translation that left the base, and only while
// the Backends hold the same names in the same places.
func TestKeptIdentitiesAreTheLastTranslations(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-protocols.in.yaml"))
	versions := newAPIVersions()
	versions.assign(t, res)
	addrs = versions.answers(t, addrs)
	opts.Cache = NewCache()
	Translate(res, addrs, opts)

	next := newTranslator(res, addrs, opts)
	base := next.cache.takeBase()
	if base == nil {
		t.Fatal("the translation left no base")
	}
	ids := next.keptIdentities(base)
	if len(ids) != len(res.Backends) || len(ids) < 2 {
		t.Fatalf("kept identities: %d, want one per Backend (%d)", len(ids), len(res.Backends))
	}
	for i := range res.Backends {
		if b := res.Backends[i]; ids[i] != (backendID{uid: b.UID, generation: b.Generation}) {
			t.Errorf("place %d: kept %+v, want %s's identity %s/%d", i, ids[i], b.Name, b.UID, b.Generation)
		}
	}
	other := *base
	other.epoch++
	if next.keptIdentities(&other) != nil {
		t.Errorf("identities given against a base another translation left")
	}
	next.keepBackendIndex()
	base.epoch = next.epoch // as if next had left the base too: only the places differ below

	res.Backends[0], res.Backends[1] = res.Backends[1], res.Backends[0]
	moved := newTranslator(res, addrs, opts)
	if ids := moved.keptIdentities(base); ids != nil {
		t.Errorf("identities given by place although two Backends changed places")
	}
}
