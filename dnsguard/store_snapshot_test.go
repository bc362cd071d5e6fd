package dnsguard

import (
	"net/netip"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
)

// TestAddressesIsOneMapUntilSomethingChanges: Addresses hands out the same map while no
// name is tracked or untracked, no answer applied and no deadline passed; each of those
// gives a new map that says what changed, and the map handed out before is left as it
// was.
func TestAddressesIsOneMapUntilSomethingChanges(t *testing.T) {
	cfg := testConfig(dnstest.NewServer(t).Addr())
	clk := testingclock.NewFakeClock(epoch)
	s := NewStore(newTestResolver(t, cfg), cfg, StoreOptions{Clock: clk, Workers: 1})
	const name = "api.example.com"
	s.Track(name)
	first := s.Addresses()
	if again := s.Addresses(); !SameAddresses(first, again) || first[name].State != egress.ResolutionPending {
		t.Fatalf("nothing changed: same map %v, state %s; want the same map, Pending", SameAddresses(first, again), first[name].State)
	}
	s.apply(job{name: name, gen: s.entries[name].gen}, Result{State: egress.ResolutionResolved, TTL: time.Minute,
		Vetted: []netip.Addr{netip.MustParseAddr("93.184.216.34")}})
	resolved := s.Addresses()
	if SameAddresses(first, resolved) || resolved[name].State != egress.ResolutionResolved || first[name].State != egress.ResolutionPending {
		t.Fatalf("after an answer: new map %v, state %s, the old map says %s; want a new Resolved map and the old one untouched",
			!SameAddresses(first, resolved), resolved[name].State, first[name].State)
	}
	clk.Step(time.Minute + s.grace - time.Second) // the scheduler does not run: only the clock moves
	if before := s.Addresses(); !SameAddresses(resolved, before) {
		t.Fatal("a new map before any deadline")
	}
	clk.Step(time.Second) // the TTL and the grace are over: the view drops the set
	if dropped := s.Addresses(); SameAddresses(resolved, dropped) || dropped[name].State != egress.ResolutionFailed || len(dropped[name].Vetted) != 0 {
		t.Fatalf("after the TTL and the grace: state %s, vetted %v; want a new map saying Failed with nothing vetted", dropped[name].State, dropped[name].Vetted)
	}
	s.Untrack(name)
	if _, ok := s.Addresses()[name]; ok {
		t.Fatal("an untracked name is still in the map")
	}
}
