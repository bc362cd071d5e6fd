package bench

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
)

// envDNSNames is the number of names the DNS guard benchmarks resolve (default 100).
const envDNSNames = "BENCH_DNS_NAMES"

// dnsWorld is a scripted DNS server answering n names (an A and an AAAA record each)
// and a guard configuration pointed at it.
type dnsWorld struct {
	names []string
	cfg   dnsguard.Config
}

func newDNSWorld(tb testing.TB, n int) dnsWorld {
	tb.Helper()
	srv := dnstest.NewServer(tb)
	w := dnsWorld{names: make([]string, n), cfg: dnsguard.DefaultConfig()}
	for i := range n {
		name := fmt.Sprintf("host%d.%s", i, benchDomain)
		w.names[i] = name
		srv.Set(name, fmt.Sprintf("%s. 300 IN A %s", name, publicIP(i)), name+". 300 IN AAAA 2606:4700::1")
	}
	w.cfg.DNSServers, w.cfg.IPFamily = []string{srv.Addr()}, dnsguard.DualStack
	w.cfg.Timeout = 5 * time.Second // a loaded machine must not turn into timeouts
	return w
}

// BenchmarkDNSReresolve re-resolves every name the way the Store refreshes them: each
// name through the guard's Resolver (A and AAAA, answers vetted by the address policy)
// on the Store's default number of workers. One op is the whole batch.
func BenchmarkDNSReresolve(b *testing.B) {
	n := envInt(b, envDNSNames, 100)
	b.Run(fmt.Sprintf("names=%d", n), func(b *testing.B) {
		w := newDNSWorld(b, n)
		r, err := dnsguard.NewResolver(w.cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		cpu := startCPU(b)
		for b.Loop() {
			resolveAll(b, r, w.names, dnsguard.DefaultWorkers)
		}
		cpu.report(b, b.N)
		b.ReportMetric(float64(n), "names")
	})
}

// resolveAll resolves names on workers goroutines and fails unless every one resolved
// to the scripted addresses.
func resolveAll(b *testing.B, r *dnsguard.Resolver, names []string, workers int) {
	next := make(chan string)
	var failed sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for name := range next {
				res := r.Resolve(context.Background(), name)
				if res.State != egress.ResolutionResolved || len(res.Vetted) != 2 {
					failed.Do(func() { b.Errorf("%s: %s %s (%d vetted)", name, res.State, res.Message, len(res.Vetted)) })
				}
			}
		})
	}
	for _, name := range names {
		next <- name
	}
	close(next)
	wg.Wait()
}

// BenchmarkDNSStoreResolve tracks every name in a Store, as the manager does after a
// gather, and times until all of them are resolved: the Store's queue and workers on
// top of the Resolver.
func BenchmarkDNSStoreResolve(b *testing.B) {
	n := envInt(b, envDNSNames, 100)
	b.Run(fmt.Sprintf("names=%d", n), func(b *testing.B) {
		w := newDNSWorld(b, n)
		r, err := dnsguard.NewResolver(w.cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			storeResolveAll(b, r, w)
		}
	})
}

func storeResolveAll(b *testing.B, r *dnsguard.Resolver, w dnsWorld) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := dnsguard.NewStore(r, w.cfg, dnsguard.StoreOptions{})
	done := make(chan error, 1)
	go func() { done <- store.Run(ctx) }()
	defer func() { cancel(); <-done }()
	store.SetNames(w.names)
	pending := make(map[string]bool, len(w.names))
	for _, name := range w.names {
		pending[name] = true
	}
	deadline := time.After(time.Minute)
	for len(pending) > 0 {
		select {
		case <-store.Changes():
		case <-deadline:
			b.Fatalf("%d of %d names still unresolved after a minute", len(pending), len(w.names))
		}
		for _, name := range store.Changed() {
			if r, ok := store.Resolution(name); ok && r.State == egress.ResolutionResolved {
				delete(pending, name)
			}
		}
	}
}

// BenchmarkAddressPolicyCheck is the cost of vetting one address against the default
// policy (the IANA special-purpose ranges, a cluster CIDR, an allow CIDR), over a mix
// of allowed and refused IPv4, IPv6 and IPv4-embedding addresses.
func BenchmarkAddressPolicyCheck(b *testing.B) {
	cfg := dnsguard.DefaultConfig()
	cfg.ClusterCIDRs, cfg.AllowCIDRs = []string{"10.96.0.0/12", "10.244.0.0/16"}, []string{"127.0.0.0/8"}
	policy, err := cfg.AddressPolicy()
	if err != nil {
		b.Fatal(err)
	}
	mix := []struct {
		addr string
		ok   bool
	}{
		{"93.184.216.34", true}, {"10.96.0.1", false}, {"169.254.169.254", false}, {"127.0.0.1", true},
		{"2606:4700::1", true}, {"fd00::1", false}, {"::ffff:10.0.0.1", false}, {"64:ff9b::a00:1", false},
	}
	addrs := make([]netip.Addr, len(mix))
	for i, m := range mix {
		addrs[i] = netip.MustParseAddr(m.addr)
		if ok, reason := policy.CheckAddr(addrs[i]); ok != m.ok {
			b.Fatalf("%s: allowed=%v (%s), want %v", m.addr, ok, reason, m.ok)
		}
	}
	i := 0
	for b.Loop() {
		policy.CheckAddr(addrs[i%len(addrs)])
		i++
	}
}
