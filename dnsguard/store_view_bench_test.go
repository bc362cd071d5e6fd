package dnsguard

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
)

// BenchmarkAddressesAfterRefreshes is what a reconcile's read of the addresses costs at
// 10,000 resolved names when 40 of them were refreshed since the last read with the
// answers they had (a short TTL's steady state: a refresh between any two reconciles).
func BenchmarkAddressesAfterRefreshes(b *testing.B) {
	const n, refreshed = 10000, 40
	cfg := testConfig(dnstest.NewServer(b).Addr())
	clk := testingclock.NewFakeClock(epoch)
	s := NewStore(newTestResolver(b, cfg), cfg, StoreOptions{Clock: clk, Workers: 1})
	ip := []netip.Addr{netip.MustParseAddr("93.184.216.34")}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("api%d.example.com", i)
		s.Track(names[i])
		applyTo(s, names[i], Result{State: egress.ResolutionResolved, TTL: time.Minute, Vetted: ip})
	}
	s.Addresses()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		clk.Step(time.Millisecond)
		for j := range refreshed {
			applyTo(s, names[(i*refreshed+j)%n], Result{State: egress.ResolutionResolved, TTL: time.Minute, Vetted: ip})
		}
		b.StartTimer()
		s.Addresses()
	}
}
