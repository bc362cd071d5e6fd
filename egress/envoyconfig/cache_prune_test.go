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
		change{"a second cluster", func(gw *ir.Gateway) {
			gw.Clusters = append(gw.Clusters, &ir.Cluster{Name: "backend/default/web/80", Protocol: ir.ProtocolHTTP1,
				Endpoints: []ir.Endpoint{{Address: "192.0.2.9", Port: 80}}})
		}},
		change{"clusters and secrets in the reverse order, as many as before", func(gw *ir.Gateway) {
			slices.Reverse(gw.Clusters)
			slices.Reverse(gw.Secrets)
		}},
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
		clusters := irNames(gw.Clusters, func(c *ir.Cluster) string { return c.Name })
		secrets := irNames(gw.Secrets, func(s ir.Secret) string { return s.Name })
		for _, c := range []struct {
			kind      string
			got, want []string
		}{
			{"listeners", slices.Sorted(maps.Keys(m.listeners)), listeners},
			{"route configurations", slices.Sorted(maps.Keys(m.routes)), listeners},
			{"clusters", placedNames(m.clusters), clusters},
			{"endpoints", placedNames(m.endpoints), clusters},
			{"secrets", placedNames(m.secrets), secrets},
		} {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("%s: the memo holds %s %v; want %v", step.name, c.kind, c.got, c.want)
			}
		}
	}
}

// placedNames is the names a placed memo holds entries for, in order; a name whose
// entry is missing, or does not name the resource in it, is marked.
func placedNames[In, Out any](m *placedMemo[In, Out]) []string {
	var out []string
	for i, e := range m.entries {
		switch {
		case e.in == nil:
			out = append(out, "(no entry for "+m.places.names[i]+")")
		case memoName(e.in) != m.places.names[i]:
			out = append(out, "(the entry of "+memoName(e.in)+" at "+m.places.names[i]+")")
		default:
			out = append(out, m.places.names[i])
		}
	}
	slices.Sort(out)
	return out
}

// memoName is the name of a kept cluster or secret.
func memoName(in any) string {
	switch v := in.(type) {
	case *ir.Cluster:
		return v.Name
	case *ir.Secret:
		return v.Name
	}
	return "?"
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
