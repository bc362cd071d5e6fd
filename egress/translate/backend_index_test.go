package translate

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// TestKeptBackendIndexFollowsTheInput: the Cache keeps the Backend index of one
// translation for the next. Each step translates as a cold translation would; the index
// is taken again only while the Backends have the same names in the same places (an
// edit), and made anew when one is renamed or two trade places; between translations it
// holds names only, no object or translation.
func TestKeptBackendIndexFollowsTheInput(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-protocols.in.yaml"))
	if len(res.Backends) < 3 {
		t.Fatalf("the input has %d Backends, want at least 3", len(res.Backends))
	}
	rng := rand.New(rand.NewPCG(7, 11))
	cache, versions := NewCache(), newAPIVersions()
	compareWithCold(t, "first translation", cache, versions, res, addrs, opts)
	for i, step := range []struct {
		what   string
		change func()
		reused bool
	}{
		{"a Backend's spec edited", func() { editBackendSpec(rng, res) }, true},
		{"another edit", func() { editBackendSpec(rng, res) }, true},
		{"a Backend renamed", func() { res.Backends[1].Name += "-renamed" }, false},
		{"two Backends trade places", func() { res.Backends[0], res.Backends[2] = res.Backends[2], res.Backends[0] }, false},
		{"an edit after the new order", func() { editBackendSpec(rng, res) }, true},
	} {
		kept := cache.backendIndex
		step.change()
		compareWithCold(t, fmt.Sprintf("step %d: %s", i+1, step.what), cache, versions, res, addrs, opts)
		if got := cache.backendIndex; got == nil || (got == kept) != step.reused {
			t.Fatalf("step %d (%s): index kept %p, after it %p; want it taken again: %v", i+1, step.what, kept, got, step.reused)
		}
		for _, s := range cache.backendIndex.slots {
			if s.b != nil || s.tb != nil || !s.until.IsZero() {
				t.Fatalf("step %d (%s): the kept index still holds %s's object or translation", i+1, step.what, s.name)
			}
		}
	}
}
