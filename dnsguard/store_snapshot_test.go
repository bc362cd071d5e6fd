package dnsguard

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
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

// TestPatchedAddressesAreAFreshView runs 3,000 seeded steps on a Store without its
// workers (names tracked and untracked, answers, failures, refusals, the clock moving,
// expiries) and after each compares Addresses, which patches its last map with the
// names changed since, with a view of every entry made from nothing: they must say the
// same to translation (Expires aside, which a patch leaves as the last view had it when
// nothing else changed); each map handed out must also stay as it was handed out.
func TestPatchedAddressesAreAFreshView(t *testing.T) {
	cfg := testConfig(dnstest.NewServer(t).Addr())
	clk := testingclock.NewFakeClock(epoch)
	s := NewStore(newTestResolver(t, cfg), cfg, StoreOptions{Clock: clk, Workers: 1})
	rng := rand.New(rand.NewPCG(7, 11))
	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprintf("n%d.example.com", i)
	}
	addrs := []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("93.184.216.35"), netip.MustParseAddr("2606:2800::1")}
	var handed []egress.Addresses
	var copies []egress.Addresses
	patched := 0
	for step := range 3000 {
		name := names[rng.IntN(len(names))]
		switch op := rng.IntN(10); {
		case op == 0:
			s.Untrack(name)
		case op <= 2:
			s.Track(name)
		case op <= 5:
			applyTo(s, name, Result{State: egress.ResolutionResolved, TTL: time.Duration(1+rng.IntN(120)) * time.Second,
				Vetted: addrs[:1+rng.IntN(len(addrs))]})
		case op == 6:
			applyTo(s, name, Result{State: egress.ResolutionFailed, Transient: true, Message: "timeout"})
		case op == 7:
			applyTo(s, name, Result{State: egress.ResolutionFailed, Final: rng.IntN(2) == 0, Message: "refused"})
		case op == 8:
			clk.Step(time.Duration(rng.IntN(90)) * time.Second)
			s.expireDue()
		}
		if rng.IntN(3) == 0 {
			continue // several changes between two reads
		}
		before := s.snap
		got := s.Addresses()
		s.mu.Lock()
		want, _ := s.viewAllLocked(clk.Now())
		s.mu.Unlock()
		if !maps.EqualFunc(got, want, egress.SameForTranslation) {
			t.Fatalf("step %d: Addresses says otherwise to translation than a fresh view:\n got %v\nwant %v", step, got, want)
		}
		if before != nil && !SameAddresses(before, got) {
			patched++
		}
		handed, copies = append(handed, got), append(copies, maps.Clone(got))
	}
	for i := range handed {
		if !reflect.DeepEqual(handed[i], copies[i]) {
			t.Fatalf("map %d changed after it was handed out", i)
		}
	}
	if patched < 100 {
		t.Fatalf("only %d new maps: the steps exercised little", patched)
	}
}

// TestARefreshThatOnlyMovesExpiryKeepsTheMap: an answer that says what the last one
// said, with a new TTL, hands out the same map (translation reads nothing it moved);
// Resolution tells the entry's new expiry, and the map changes once an answer moves
// an address, and when the refreshed set's own TTL and grace are over (later or sooner
// than the first's), not the first's.
func TestARefreshThatOnlyMovesExpiryKeepsTheMap(t *testing.T) {
	cfg := testConfig(dnstest.NewServer(t).Addr())
	clk := testingclock.NewFakeClock(epoch)
	s := NewStore(newTestResolver(t, cfg), cfg, StoreOptions{Clock: clk, Workers: 1})
	const name = "api.example.com"
	answer := func(ttl time.Duration, ips ...string) {
		r := Result{State: egress.ResolutionResolved, TTL: ttl}
		for _, ip := range ips {
			r.Vetted = append(r.Vetted, netip.MustParseAddr(ip))
		}
		applyTo(s, name, r)
	}
	s.Track(name)
	answer(time.Minute, "93.184.216.34")
	first := s.Addresses()
	clk.Step(50 * time.Second)
	answer(2*time.Minute, "93.184.216.34")
	if got := s.Addresses(); !SameAddresses(first, got) {
		t.Fatal("a refresh with the same address made a new map")
	}
	if r, _ := s.Resolution(name); !r.Vetted[0].Expires.Equal(clk.Now().Add(2 * time.Minute)) {
		t.Fatalf("Resolution's expiry is %v; want the refresh's, %v", r.Vetted[0].Expires, clk.Now().Add(2*time.Minute))
	}
	clk.Step(time.Minute + s.grace) // past the first answer's TTL and grace, not the refresh's
	if got := s.Addresses(); got[name].State != egress.ResolutionResolved {
		t.Fatalf("after the first answer's TTL and grace the view says %s; the refresh's still holds", got[name].State)
	}
	clk.Step(time.Minute)
	if got := s.Addresses(); got[name].State != egress.ResolutionFailed {
		t.Fatalf("after the refresh's TTL and grace the view says %s; want Failed", got[name].State)
	}
	answer(time.Hour, "93.184.216.35")
	moved := s.Addresses()
	if moved[name].State != egress.ResolutionResolved || moved[name].Vetted[0].IP != netip.MustParseAddr("93.184.216.35") {
		t.Fatalf("a new address is not in the view: %+v", moved[name])
	}
	answer(time.Second, "93.184.216.35") // a shorter TTL: the view's deadline comes sooner
	if got := s.Addresses(); !SameAddresses(moved, got) {
		t.Fatal("a refresh with a shorter TTL and the same address made a new map")
	}
	clk.Step(time.Second + s.grace)
	if got := s.Addresses(); got[name].State != egress.ResolutionFailed {
		t.Fatalf("after the shorter TTL and the grace the view says %s; want Failed", got[name].State)
	}
}

// applyTo applies r as the answer to name's current entry, if it is tracked.
func applyTo(s *Store, name string, r Result) {
	s.mu.Lock()
	e := s.entries[name]
	s.mu.Unlock()
	if e != nil {
		r.Name = name
		s.apply(job{name: name, gen: e.gen}, r)
	}
}
