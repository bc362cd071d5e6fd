package dnsguard

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
)

// scaleServer scripts n names, each with one public A and one AAAA record.
func scaleServer(t testing.TB, n int) (*dnstest.Server, []string) {
	srv := dnstest.NewServer(t)
	names := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("host%d.example.com", i)
		names[i] = name
		srv.Set(name, fmt.Sprintf("%s. 60 IN A 93.%d.%d.%d", name, 1+i/65536, i/256%256, i%256), name+". 60 IN AAAA 2606:4700::1")
	}
	return srv, names
}

// TestStoreResolvesManyNames tracks 1,000 names with a real clock and 16 workers and
// checks every one resolves; it logs the wall time.
func TestStoreResolvesManyNames(t *testing.T) {
	const n = 1000
	srv, names := scaleServer(t, n)
	cfg := testConfig(srv.Addr())
	cfg.Timeout = 2 * time.Second
	s := NewStore(newTestResolver(t, cfg), cfg, StoreOptions{})
	start := time.Now()
	s.SetNames(names)
	stop := runStore(t, s)
	defer stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		done := 0
		for _, r := range s.Addresses() {
			if r.State == egress.ResolutionResolved {
				done++
			} else if r.State != egress.ResolutionPending {
				t.Fatalf("a name ended %s: %s", r.State, r.Message)
			}
		}
		if done == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d names resolved within 30s", done, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("%d names (A+AAAA, %d queries) resolved by the Store in %v", n, 2*n, time.Since(start))
}

func BenchmarkResolve1000Names(b *testing.B) {
	srv, names := scaleServer(b, 1000)
	cfg := testConfig(srv.Addr())
	cfg.Timeout = 2 * time.Second
	r := newTestResolver(b, cfg)
	for b.Loop() {
		for _, res := range resolveAll(context.Background(), r, names) {
			if res.State != egress.ResolutionResolved {
				b.Fatalf("%s: %s %s", res.Name, res.State, res.Message)
			}
		}
	}
}
