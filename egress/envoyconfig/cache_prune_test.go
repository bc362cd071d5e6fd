package envoyconfig

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// TestCacheMemoHoldsTheLastBuild runs the change sequence through one Cache and, after
// every successful build, checks that the Gateway's memo, updated in place, has an entry
// for exactly the resources of that build: removed clusters, secrets and listeners leave
// it, whatever failed builds left behind.
func TestCacheMemoHoldsTheLastBuild(t *testing.T) {
	cache := NewCache()
	gw := validGateway()
	steps := append(changeSequence(), change{"back to the start, listener renamed", func(gw *ir.Gateway) { *gw = validGateway(); gw.Listeners[0].Name = "https-renamed" }},
		change{"secrets and clusters emptied", func(gw *ir.Gateway) {
			gw.Listeners, gw.Clusters, gw.Secrets = gw.Listeners[:0], gw.Clusters[:0], gw.Secrets[:0]
		}})
	for _, step := range steps {
		step.edit(&gw)
		if _, err := cache.Build(gw, testOptions); err != nil {
			if !strings.HasSuffix(step.name, "(error)") {
				t.Fatalf("%s: %v", step.name, err)
			}
			continue
		}
		m := cache.gateways[gw.Name]
		listeners := irNames(gw.Listeners, func(l ir.Listener) string { return l.Name })
		clusters := irNames(gw.Clusters, func(c ir.Cluster) string { return c.Name })
		secrets := irNames(gw.Secrets, func(s ir.Secret) string { return s.Name })
		for _, c := range []struct {
			kind      string
			got, want []string
		}{
			{"listeners", slices.Sorted(maps.Keys(m.listeners)), listeners},
			{"route configurations", slices.Sorted(maps.Keys(m.routes)), listeners},
			{"clusters", slices.Sorted(maps.Keys(m.clusters)), clusters},
			{"endpoints", slices.Sorted(maps.Keys(m.endpoints)), clusters},
			{"secrets", slices.Sorted(maps.Keys(m.secrets)), secrets},
		} {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("%s: the memo holds %s %v; want %v", step.name, c.kind, c.got, c.want)
			}
		}
	}
}

func irNames[T any](items []T, name func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, name(it))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestConcurrentBuildsOfOneGateway builds one Gateway from several goroutines with one
// Cache: a build takes the memo while it updates it, so the others start from nothing
// (run with -race), and every build equals a cold one.
func TestConcurrentBuildsOfOneGateway(t *testing.T) {
	cache := NewCache()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			gw := validGateway()
			if i%2 == 1 {
				gw.Clusters[0].TLS.SNI = "odd.example.com"
			}
			for range 20 {
				got, err := cache.Build(gw, testOptions)
				if err != nil {
					t.Error(err)
					return
				}
				want, err := NewCache().Build(gw, testOptions)
				if err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(marshalAll(t, got), marshalAll(t, want)) {
					t.Error("a concurrent cached build differs from a cold build")
					return
				}
			}
		})
	}
	wg.Wait()
}
