package dnsguard

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const waitLimit = 5 * time.Second

// storeHarness runs a Store on a fake clock against a scripted server and lets a test
// step time and wait for the Store to act, with every wait bounded.
type storeHarness struct {
	t       *testing.T
	srv     *dnstest.Server
	clk     *testingclock.FakeClock
	store   *Store
	applied chan string
	idle    chan time.Time
	stop    func()
}

func newStoreHarness(t *testing.T, mutate func(*Config)) *storeHarness {
	t.Helper()
	srv := dnstest.NewServer(t)
	cfg := testConfig(srv.Addr())
	cfg.Timeout = 100 * time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	clk := testingclock.NewFakeClock(epoch)
	s := NewStore(newTestResolver(t, cfg), cfg, StoreOptions{Clock: clk, Workers: 4})
	s.jitter = func() float64 { return 0.5 } // refreshes at 85% of the TTL, backoff x1.0
	h := &storeHarness{t: t, srv: srv, clk: clk, store: s, applied: make(chan string, 4096), idle: make(chan time.Time, 4096)}
	s.onApplied = func(n string) {
		select {
		case h.applied <- n:
		default:
		}
	}
	s.onIdle = func(now time.Time) {
		select {
		case h.idle <- now:
		default:
		}
	}
	h.stop = runStore(t, s)
	return h
}

// runStore runs s until the returned stop (also called in t.Cleanup) and checks it ends.
func runStore(t *testing.T, s *Store) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(waitLimit):
				t.Errorf("Run did not return within %v of cancel", waitLimit)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (h *storeHarness) waitApplied(name string) {
	h.t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case n := <-h.applied:
			if n == name {
				return
			}
		case <-deadline:
			h.t.Fatalf("no resolution of %s applied within %v", name, waitLimit)
		}
	}
}

// step advances the fake clock and waits until the scheduler has seen the new time, so
// everything due by then has been dispatched.
func (h *storeHarness) step(d time.Duration) {
	h.t.Helper()
	h.clk.Step(d)
	h.store.poke()
	now := h.clk.Now()
	deadline := time.After(waitLimit)
	for {
		select {
		case seen := <-h.idle:
			if !seen.Before(now) {
				return
			}
		case <-deadline:
			h.t.Fatalf("scheduler did not reach %v within %v", now, waitLimit)
		}
	}
}

func (h *storeHarness) res(name string) egress.Resolution {
	h.t.Helper()
	r, ok := h.store.Resolution(name)
	if !ok {
		h.t.Fatalf("%s is not tracked", name)
	}
	policy := h.store.resolver.(*Resolver).AddressPolicy()
	for _, v := range r.Vetted {
		if ok, reason := policy.CheckAddr(v.IP); !ok {
			h.t.Fatalf("%s: the Store vets %s, which the policy refuses (%s)", name, v.IP, reason)
		}
	}
	if (r.State == egress.ResolutionResolved || r.State == egress.ResolutionStale) != (len(r.Vetted) > 0) {
		h.t.Fatalf("%s: state %s with %d vetted addresses", name, r.State, len(r.Vetted))
	}
	return r
}

func (h *storeHarness) due(name string) time.Time {
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	return h.store.entries[name].due
}

func (h *storeHarness) inflight(name string) bool {
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	e := h.store.entries[name]
	return e != nil && e.inflight
}

// expectChange asserts a change signal is pending and exactly names changed.
func (h *storeHarness) expectChange(names ...string) {
	h.t.Helper()
	select {
	case <-h.store.Changes():
	default:
		h.t.Fatalf("no change signalled, want %v", names)
	}
	if got := h.store.Changed(); !slices.Equal(got, names) {
		h.t.Fatalf("changed names = %v, want %v", got, names)
	}
}

func (h *storeHarness) expectNoChange() {
	h.t.Helper()
	select {
	case <-h.store.Changes():
		h.t.Fatalf("change signalled for %v, want none", h.store.Changed())
	default:
	}
}

func vettedIPs(r egress.Resolution) []netip.Addr {
	var out []netip.Addr
	for _, v := range r.Vetted {
		out = append(out, v.IP)
	}
	return out
}

func TestStoreRefreshesBeforeExpiry(t *testing.T) {
	h := newStoreHarness(t, nil)
	const name = "api.example.com"
	h.srv.Set(name, name+". 60 IN A 93.184.216.34")
	h.store.Track(name)
	h.waitApplied(name)
	r := h.res(name)
	if r.State != egress.ResolutionResolved || !slices.Equal(vettedIPs(r), addrs("93.184.216.34")) {
		t.Fatalf("first resolution = %+v", r)
	}
	if exp := r.Vetted[0].Expires; !exp.Equal(epoch.Add(60 * time.Second)) {
		t.Errorf("Expires = %v, want now + 60s", exp)
	}
	if due := h.due(name); !due.Equal(epoch.Add(51 * time.Second)) {
		t.Errorf("refresh due at %v, want 85%% of 60s = +51s", due.Sub(epoch))
	}
	h.expectChange(name)
	queries := h.srv.Queries(name)

	h.step(50 * time.Second)
	if got := h.srv.Queries(name); got != queries || h.inflight(name) {
		t.Fatalf("refreshed at +50s (%d queries, inflight %v), want no refresh before +51s", got-queries, h.inflight(name))
	}
	h.step(time.Second)
	h.waitApplied(name)
	if got := h.srv.Queries(name); got != queries+2 {
		t.Errorf("%d queries at the refresh, want 2 (A and AAAA)", got-queries)
	}
	r = h.res(name)
	if exp := r.Vetted[0].Expires; !exp.Equal(epoch.Add(111 * time.Second)) {
		t.Errorf("Expires after refresh = +%v, want +111s", exp.Sub(epoch))
	}
	if due := h.due(name); !due.Equal(epoch.Add(102 * time.Second)) {
		t.Errorf("next refresh at +%v, want +102s", due.Sub(epoch))
	}
	h.expectNoChange()
}

// TestStoreKeepsSinceAcrossRefreshes: a refresh returning the same address keeps the
// time it was first vetted (and signals no change, so no status is rewritten); a new
// address is dated at the refresh that brought it, and one that stays keeps its date.
func TestStoreKeepsSinceAcrossRefreshes(t *testing.T) {
	h := newStoreHarness(t, nil)
	const name = "api.example.com"
	h.srv.Set(name, name+". 60 IN A 93.184.216.34")
	h.store.Track(name)
	h.waitApplied(name)
	h.expectChange(name)
	since := func() map[netip.Addr]time.Duration {
		out := map[netip.Addr]time.Duration{}
		for _, v := range h.res(name).Vetted {
			out[v.IP] = v.Since.Sub(epoch)
		}
		return out
	}
	if got := since(); got[netip.MustParseAddr("93.184.216.34")] != 0 || len(got) != 1 {
		t.Fatalf("first resolution: since %v, want 93.184.216.34 at +0s", got)
	}

	h.step(51 * time.Second)
	h.waitApplied(name)
	if got := since(); got[netip.MustParseAddr("93.184.216.34")] != 0 {
		t.Errorf("after a refresh with the same answer: since %v, want +0s kept", got)
	}
	h.expectNoChange()

	h.srv.Set(name, name+". 60 IN A 93.184.216.34", name+". 60 IN A 93.184.216.35")
	h.step(51 * time.Second)
	h.waitApplied(name)
	want := map[netip.Addr]time.Duration{netip.MustParseAddr("93.184.216.34"): 0, netip.MustParseAddr("93.184.216.35"): 102 * time.Second}
	if got := since(); !maps.Equal(got, want) {
		t.Errorf("after a new address appeared: since %v, want %v", got, want)
	}
	h.expectChange(name)
}

func TestStoreClampsTTL(t *testing.T) {
	tests := []struct {
		name       string
		ttl        string
		wantExpiry time.Duration
		wantDue    time.Duration
	}{
		{"TTL 0 is raised to the minimum", "0", 5 * time.Second, 4250 * time.Millisecond},
		{"TTL 1 is raised to the minimum", "1", 5 * time.Second, 4250 * time.Millisecond},
		{"TTL at the minimum", "5", 5 * time.Second, 4250 * time.Millisecond},
		{"TTL between the bounds", "100", 100 * time.Second, 85 * time.Second},
		{"TTL at the maximum", "300", 300 * time.Second, 255 * time.Second},
		{"TTL above the maximum", "3600", 300 * time.Second, 255 * time.Second},
		{"TTL 2^31-1", "2147483647", 300 * time.Second, 255 * time.Second},
		{"TTL 2^31 counts as 0", "2147483648", 5 * time.Second, 4250 * time.Millisecond},
	}
	h := newStoreHarness(t, func(c *Config) { c.IPFamily = IPv4 })
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("ttl%d.example.com", i)
			h.srv.Set(name, name+". "+tt.ttl+" IN A 93.184.216.34")
			now := h.clk.Now()
			h.store.Track(name)
			h.waitApplied(name)
			r := h.res(name)
			if len(r.Vetted) != 1 || !r.Vetted[0].Expires.Equal(now.Add(tt.wantExpiry)) {
				t.Fatalf("vetted %+v, want expiry +%v", r.Vetted, tt.wantExpiry)
			}
			if due := h.due(name).Sub(now); due != tt.wantDue {
				t.Errorf("refresh after %v, want %v", due, tt.wantDue)
			}
		})
	}
}

func TestStoreRefreshJitter(t *testing.T) {
	s := NewStore(nil, DefaultConfig(), StoreOptions{})
	for _, ttl := range []time.Duration{5 * time.Second, 60 * time.Second, 300 * time.Second} {
		for range 1000 {
			d := s.refreshDelay(ttl)
			if d < ttl*8/10 || d > ttl*9/10 {
				t.Fatalf("refresh delay %v for TTL %v, want within 80-90%%", d, ttl)
			}
		}
	}
	s.jitter = func() float64 { return 0 }
	if d := s.refreshDelay(100 * time.Second); d != 80*time.Second {
		t.Errorf("lowest jitter: %v, want 80s", d)
	}
	s.jitter = func() float64 { return 0.9999999 }
	if d := s.refreshDelay(100 * time.Second); d < 89*time.Second || d >= 90*time.Second {
		t.Errorf("highest jitter: %v, want just under 90s", d)
	}
	s.jitter = func() float64 { return 0.5 }
	for _, tt := range []struct {
		failures int
		want     time.Duration
	}{{1, 5 * time.Second}, {2, 10 * time.Second}, {3, 20 * time.Second}, {6, 160 * time.Second}, {7, 300 * time.Second}, {100, 300 * time.Second}} {
		if got := s.retryDelay(tt.failures, 0); got != tt.want {
			t.Errorf("retryDelay(%d) = %v, want %v", tt.failures, got, tt.want)
		}
	}
}

func TestStoreRebindingDropsTheOldAddress(t *testing.T) {
	h := newStoreHarness(t, nil)
	const name = "rebind.example.com"
	h.srv.Script(name,
		dnstest.Response{Answer: []string{name + ". 60 IN A 93.184.216.34"}},
		dnstest.Response{Answer: []string{name + ". 60 IN A 127.0.0.1"}})
	h.store.Track(name)
	h.waitApplied(name)
	h.expectChange(name)
	if r := h.res(name); !slices.Equal(vettedIPs(r), addrs("93.184.216.34")) {
		t.Fatalf("first answer vetted %v", vettedIPs(r))
	}
	h.step(51 * time.Second)
	h.waitApplied(name)
	r := h.res(name)
	if r.State != egress.ResolutionAllForbidden || len(r.Vetted) != 0 {
		t.Fatalf("after rebinding: %s vetted %v, want AllAddressesForbidden and nothing vetted", r.State, vettedIPs(r))
	}
	if len(r.Blocked) != 1 || r.Blocked[0].IP != netip.MustParseAddr("127.0.0.1") || r.Blocked[0].Reason != "loopback (127.0.0.0/8)" {
		t.Errorf("blocked = %+v, want 127.0.0.1 loopback", r.Blocked)
	}
	if got := h.store.Addresses()[name]; len(got.Vetted) != 0 {
		t.Errorf("Addresses still vets %v", got.Vetted)
	}
	h.expectChange(name)
}

func TestStoreStaleGraceThenDrop(t *testing.T) {
	h := newStoreHarness(t, func(c *Config) { c.IPFamily = IPv4 })
	const name = "flaky.example.com"
	h.srv.Script(name,
		dnstest.Response{Answer: []string{name + ". 60 IN A 93.184.216.34"}},
		dnstest.Response{Drop: true})
	h.store.Track(name)
	h.waitApplied(name)
	h.expectChange(name)

	h.step(51 * time.Second) // refresh: timeout
	h.waitApplied(name)
	failedAt := h.clk.Now()
	staleUntil := failedAt.Add(5 * time.Minute)
	r := h.res(name)
	if r.State != egress.ResolutionStale || !slices.Equal(vettedIPs(r), addrs("93.184.216.34")) {
		t.Fatalf("after the first failure: %s %v, want Stale keeping the vetted set", r.State, vettedIPs(r))
	}
	if !r.Vetted[0].Expires.Equal(staleUntil) || !strings.Contains(r.Message, "timeout") {
		t.Errorf("stale set expires %v (want %v), message %q", r.Vetted[0].Expires, staleUntil, r.Message)
	}
	h.expectChange(name)
	if due := h.due(name).Sub(failedAt); due != 5*time.Second {
		t.Errorf("retry after %v, want 5s", due)
	}

	h.step(5 * time.Second) // second failure: still stale, no change
	h.waitApplied(name)
	if r := h.res(name); r.State != egress.ResolutionStale || len(r.Vetted) != 1 {
		t.Fatalf("after the second failure: %s", r.State)
	}
	h.expectNoChange()
	if due := h.due(name).Sub(h.clk.Now()); due != 10*time.Second {
		t.Errorf("second retry after %v, want 10s (backoff)", due)
	}

	h.step(staleUntil.Sub(h.clk.Now()) - time.Second)
	h.waitApplied(name)
	if r := h.res(name); r.State != egress.ResolutionStale {
		t.Fatalf("one second before the grace ends: %s, want Stale", r.State)
	}
	if due := h.due(name); !due.Equal(staleUntil) {
		t.Errorf("next retry at %v, want the end of the grace %v", due, staleUntil)
	}
	h.expectNoChange()

	h.step(time.Second) // the grace ends
	h.waitApplied(name)
	r = h.res(name)
	if r.State != egress.ResolutionFailed || len(r.Vetted) != 0 {
		t.Fatalf("after the grace: %s %v, want ResolutionFailed with nothing vetted", r.State, vettedIPs(r))
	}
	if !strings.Contains(r.Message, "dropped after the 5m0s stale grace") {
		t.Errorf("message %q does not say the set was dropped", r.Message)
	}
	h.expectChange(name)

	// The name comes back.
	h.srv.Set(name, name+". 60 IN A 93.184.216.35")
	h.step(h.due(name).Sub(h.clk.Now()))
	h.waitApplied(name)
	if r := h.res(name); r.State != egress.ResolutionResolved || !slices.Equal(vettedIPs(r), addrs("93.184.216.35")) {
		t.Fatalf("after recovery: %s %v", r.State, vettedIPs(r))
	}
	h.expectChange(name)
}

func TestStoreStaleRecovers(t *testing.T) {
	h := newStoreHarness(t, func(c *Config) { c.IPFamily = IPv4 })
	const name = "blip.example.com"
	ok := dnstest.Response{Answer: []string{name + ". 60 IN A 93.184.216.34"}}
	h.srv.Script(name, ok, dnstest.Response{Rcode: dns.RcodeServerFailure}, ok)
	h.store.Track(name)
	h.waitApplied(name)
	h.expectChange(name)
	h.step(51 * time.Second)
	h.waitApplied(name)
	if r := h.res(name); r.State != egress.ResolutionStale || !strings.Contains(r.Message, "SERVFAIL") {
		t.Fatalf("after SERVFAIL: %s %q", r.State, r.Message)
	}
	h.expectChange(name)
	h.step(5 * time.Second)
	h.waitApplied(name)
	r := h.res(name)
	if r.State != egress.ResolutionResolved || !r.Vetted[0].Expires.Equal(h.clk.Now().Add(60*time.Second)) {
		t.Fatalf("after recovery: %s %+v", r.State, r.Vetted)
	}
	h.expectChange(name)
	// A later failure starts a fresh grace.
	h.srv.Script(name, dnstest.Response{Rcode: dns.RcodeServerFailure})
	h.step(51 * time.Second)
	h.waitApplied(name)
	if r := h.res(name); r.State != egress.ResolutionStale || !r.Vetted[0].Expires.Equal(h.clk.Now().Add(5*time.Minute)) {
		t.Fatalf("new failure: %s %+v, want a fresh 5m grace", r.State, r.Vetted)
	}
}

func TestStoreZeroGraceDropsAtOnce(t *testing.T) {
	h := newStoreHarness(t, func(c *Config) { c.StaleGrace = 0; c.IPFamily = IPv4 })
	const name = "nograce.example.com"
	h.srv.Script(name, dnstest.Response{Answer: []string{name + ". 60 IN A 93.184.216.34"}}, dnstest.Response{Rcode: dns.RcodeServerFailure})
	h.store.Track(name)
	h.waitApplied(name)
	h.step(51 * time.Second)
	h.waitApplied(name)
	if r := h.res(name); r.State != egress.ResolutionFailed || len(r.Vetted) != 0 {
		t.Fatalf("with no grace: %s %v, want ResolutionFailed at once", r.State, vettedIPs(r))
	}
}

func TestStoreFailureWithoutPreviousSet(t *testing.T) {
	h := newStoreHarness(t, func(c *Config) { c.IPFamily = IPv4 })
	const name = "down.example.com"
	h.srv.Script(name, dnstest.Response{Drop: true})
	h.store.Track(name)
	h.waitApplied(name)
	r := h.res(name)
	if r.State != egress.ResolutionFailed || len(r.Vetted) != 0 || !strings.Contains(r.Message, "timeout") {
		t.Fatalf("first resolution failing: %s %q, want ResolutionFailed (no stale set to serve)", r.State, r.Message)
	}
	h.expectChange(name)
	for i, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second} {
		if due := h.due(name).Sub(h.clk.Now()); due != want {
			t.Fatalf("retry %d after %v, want %v", i+1, due, want)
		}
		h.step(want)
		h.waitApplied(name)
	}
	h.expectNoChange()
}

func TestStoreNegativeAnswersDropAtOnce(t *testing.T) {
	tests := []struct {
		name      string
		then      dnstest.Response
		wantState egress.ResolutionState
	}{
		{"NXDOMAIN", dnstest.Response{Rcode: dns.RcodeNameError}, egress.ResolutionNXDomain},
		{"no records", dnstest.Response{}, egress.ResolutionFailed},
		{"CNAME to a refused name", dnstest.Response{Answer: []string{"neg.example.com. 60 IN CNAME x.internal."}}, egress.ResolutionForbiddenName},
		{"CNAME loop", dnstest.Response{Answer: []string{"neg.example.com. 60 IN CNAME neg.example.com."}}, egress.ResolutionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStoreHarness(t, func(c *Config) { c.IPFamily = IPv4 })
			const name = "neg.example.com"
			h.srv.Script(name, dnstest.Response{Answer: []string{name + ". 60 IN A 93.184.216.34"}}, tt.then)
			h.store.Track(name)
			h.waitApplied(name)
			h.expectChange(name)
			h.step(51 * time.Second)
			h.waitApplied(name)
			if r := h.res(name); r.State != tt.wantState || len(r.Vetted) != 0 {
				t.Fatalf("got %s %v (%q), want %s with nothing vetted (no stale grace)", r.State, vettedIPs(r), r.Message, tt.wantState)
			}
			h.expectChange(name)
		})
	}
}

func TestStoreChangeEventsOnlyOnRealChanges(t *testing.T) {
	h := newStoreHarness(t, func(c *Config) { c.IPFamily = IPv4 })
	const name = "events.example.com"
	rec := func(ttl int, ips ...string) dnstest.Response {
		var r dnstest.Response
		for _, ip := range ips {
			r.Answer = append(r.Answer, fmt.Sprintf("%s. %d IN A %s", name, ttl, ip))
		}
		return r
	}
	steps := []struct {
		what       string
		resp       dnstest.Response
		wantChange bool
	}{
		{"first answer", rec(60, "93.184.216.34", "93.184.216.35"), true},
		{"same answer", rec(60, "93.184.216.34", "93.184.216.35"), false},
		{"same addresses in another order", rec(60, "93.184.216.35", "93.184.216.34"), false},
		{"only the TTL differs", rec(120, "93.184.216.34", "93.184.216.35"), false},
		{"an address is added", rec(60, "93.184.216.34", "93.184.216.35", "93.184.216.36"), true},
		{"a blocked address appears", rec(60, "93.184.216.34", "93.184.216.35", "93.184.216.36", "10.0.0.1"), true},
		{"the same blocked address again", rec(60, "10.0.0.1", "93.184.216.34", "93.184.216.35", "93.184.216.36"), false},
		{"an address is removed", rec(60, "93.184.216.34", "10.0.0.1"), true},
		{"state changes to all forbidden", rec(60, "10.0.0.1"), true},
	}
	var script []dnstest.Response
	for _, s := range steps {
		script = append(script, s.resp)
	}
	h.srv.Script(name, script...)
	h.store.Track(name)
	for i, s := range steps {
		if i > 0 {
			h.step(h.due(name).Sub(h.clk.Now()))
		}
		h.waitApplied(name)
		if s.wantChange {
			h.expectChange(name)
		} else {
			h.expectNoChange()
		}
		if t.Failed() {
			t.Fatalf("at step %q", s.what)
		}
	}
}

func TestStoreUntrackStopsRefreshing(t *testing.T) {
	h := newStoreHarness(t, nil)
	const name = "gone.example.com"
	h.srv.Set(name, name+". 60 IN A 93.184.216.34")
	h.store.Track(name)
	h.waitApplied(name)
	queries := h.srv.Queries(name)
	h.store.Untrack(name)
	h.step(10 * time.Minute)
	h.step(10 * time.Minute)
	if got := h.srv.Queries(name); got != queries {
		t.Errorf("%d queries after Untrack, want none", got-queries)
	}
	if _, ok := h.store.Resolution(name); ok {
		t.Error("Resolution still knows the untracked name")
	}
	if _, ok := h.store.Addresses()[name]; ok {
		t.Error("Addresses still lists the untracked name")
	}
	if names := h.store.Names(); len(names) != 0 {
		t.Errorf("Names = %v", names)
	}
}

func TestStoreUntrackDiscardsAResolutionInFlight(t *testing.T) {
	h := newStoreHarness(t, func(c *Config) { c.IPFamily = IPv4; c.Timeout = 2 * time.Second })
	const name = "slow.example.com"
	h.srv.Script(name,
		dnstest.Response{Delay: 300 * time.Millisecond, Answer: []string{name + ". 60 IN A 93.184.216.34"}},
		dnstest.Response{Answer: []string{name + ". 60 IN A 93.184.216.35"}})
	h.store.Track(name)
	waitFor(t, func() bool { return h.srv.Queries(name) == 1 })
	h.store.Untrack(name)
	h.store.Track(name) // a new tracking: its own resolution gets the second answer
	h.waitApplied(name)
	h.waitApplied(name) // the slow, stale one
	r := h.res(name)
	if !slices.Equal(vettedIPs(r), addrs("93.184.216.35")) {
		t.Fatalf("vetted %v: the resolution started before Untrack was applied", vettedIPs(r))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", waitLimit)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStoreForbiddenNameIsNeverQueried(t *testing.T) {
	h := newStoreHarness(t, nil)
	const name = "kubernetes.default.svc.cluster.local"
	h.store.Track("Kubernetes.Default.SVC.cluster.local.")
	h.waitApplied(name)
	r := h.res(name)
	if r.State != egress.ResolutionForbiddenName || !strings.Contains(r.Message, "under refused suffix .cluster.local") {
		t.Fatalf("got %s %q", r.State, r.Message)
	}
	h.expectChange(name)
	h.step(time.Hour)
	if got := len(h.srv.Log()); got != 0 {
		t.Errorf("%d queries for a refused name", got)
	}
}

func TestStoreSetNames(t *testing.T) {
	h := newStoreHarness(t, nil)
	for _, n := range []string{"a.example.com", "b.example.com", "c.example.com"} {
		h.srv.Set(n, n+". 60 IN A 93.184.216.34")
	}
	h.store.SetNames([]string{"a.example.com", "B.example.com."})
	if got := h.store.Names(); !slices.Equal(got, []string{"a.example.com", "b.example.com"}) {
		t.Fatalf("Names = %v", got)
	}
	h.store.SetNames([]string{"b.example.com", "c.example.com"})
	if got := h.store.Names(); !slices.Equal(got, []string{"b.example.com", "c.example.com"}) {
		t.Fatalf("Names = %v", got)
	}
	h.waitApplied("c.example.com")
	if _, ok := h.store.Resolution("a.example.com"); ok {
		t.Error("a.example.com still tracked")
	}
}

func TestStoreChangesNeverBlock(t *testing.T) {
	h := newStoreHarness(t, nil)
	var names []string
	for i := range 50 {
		n := fmt.Sprintf("n%d.example.com", i)
		h.srv.Set(n, n+". 60 IN A 93.184.216.34")
		names = append(names, n)
	}
	h.store.SetNames(names)
	for _, n := range names {
		waitFor(t, func() bool { r, _ := h.store.Resolution(n); return r.State == egress.ResolutionResolved })
	}
	slices.Sort(names)
	h.expectChange(names...)
	h.expectNoChange()
}

func TestStoreAddressesIsACopy(t *testing.T) {
	h := newStoreHarness(t, nil)
	const name = "copy.example.com"
	h.srv.Set(name, name+". 60 IN A 93.184.216.34", name+". 60 IN A 10.0.0.1")
	h.store.Track(name)
	h.waitApplied(name)
	a := h.store.Addresses()
	a[name].Vetted[0].IP = netip.MustParseAddr("127.0.0.1")
	a[name].Blocked[0].Reason = "tampered"
	delete(a, name)
	r := h.res(name)
	if r.Vetted[0].IP != netip.MustParseAddr("93.184.216.34") || r.Blocked[0].Reason != "private (10.0.0.0/8)" {
		t.Fatalf("the Store's state changed through a returned copy: %+v", r)
	}
}

func TestStoreReadersNeverSeeAnExpiredSet(t *testing.T) {
	h := newStoreHarness(t, func(c *Config) { c.IPFamily = IPv4 })
	const name = "frozen.example.com"
	h.srv.Set(name, name+". 60 IN A 93.184.216.34")
	h.store.Track(name)
	h.waitApplied(name)
	h.stop() // no more refreshes
	h.clk.Step(60*time.Second + 5*time.Minute - time.Nanosecond)
	if r := h.res(name); r.State != egress.ResolutionResolved || len(r.Vetted) != 1 {
		t.Fatalf("just before TTL end + grace: %s, want still Resolved", r.State)
	}
	h.clk.Step(time.Nanosecond)
	r := h.res(name)
	if r.State != egress.ResolutionFailed || len(r.Vetted) != 0 {
		t.Fatalf("at TTL end + grace without refresh: %s %v, want dropped", r.State, vettedIPs(r))
	}
	if a := h.store.Addresses()[name]; len(a.Vetted) != 0 {
		t.Fatalf("Addresses still vets %v", a.Vetted)
	}
}

func TestStoreRunStopsPromptlyWithQueriesInFlight(t *testing.T) {
	cfg := testConfig(dnstest.NewBlackhole(t))
	cfg.Timeout = 10 * time.Second
	s := NewStore(newTestResolver(t, cfg), cfg, StoreOptions{Workers: 2})
	for i := range 10 {
		s.Track(fmt.Sprintf("n%d.example.com", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("Run did not return")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Run took %v to stop", d)
	}
	for n, r := range s.Addresses() {
		if r.State != egress.ResolutionPending {
			t.Errorf("%s: %s after shutdown; an interrupted resolution must not count", n, r.State)
		}
	}
}

// TestStoreConcurrentUse hammers every method from many goroutines (run with -race)
// while answers flip between public and private addresses.
func TestStoreConcurrentUse(t *testing.T) {
	srv := dnstest.NewServer(t)
	cfg := testConfig(srv.Addr())
	var names []string
	for i := range 40 {
		n := fmt.Sprintf("c%d.example.com", i)
		names = append(names, n)
		srv.Script(n,
			dnstest.Response{Answer: []string{n + ". 1 IN A 93.184.216.34", n + ". 1 IN A 10.0.0.1"}},
			dnstest.Response{Answer: []string{n + ". 1 IN A 192.168.0.1"}},
			dnstest.Response{Answer: []string{n + ". 1 IN AAAA 2606:4700::1"}})
	}
	clk := testingclock.NewFakeClock(epoch)
	s := NewStore(newTestResolver(t, cfg), cfg, StoreOptions{Clock: clk, Workers: 8})
	policy, _ := cfg.AddressPolicy()
	stop := runStore(t, s)
	var wg sync.WaitGroup
	deadline := time.Now().Add(500 * time.Millisecond)
	for g := range 6 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for time.Now().Before(deadline) {
				n := names[rng.IntN(len(names))]
				switch rng.IntN(7) {
				case 0:
					s.Track(n)
				case 1:
					s.Untrack(n)
				case 2:
					s.SetNames(names[:rng.IntN(len(names))])
				case 3:
					clk.Step(time.Second)
					s.poke()
				case 4:
					s.Changed()
				case 5:
					s.Resolution(n)
				default:
					for _, r := range s.Addresses() {
						for _, v := range r.Vetted {
							if ok, reason := policy.CheckAddr(v.IP); !ok {
								t.Errorf("vetted %s (%s)", v.IP, reason)
							}
						}
					}
				}
			}
		})
	}
	wg.Wait()
	stop()
}

func TestStoreTrackedGauge(t *testing.T) {
	reg := newTestRegistry(t)
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(nil, DefaultConfig(), StoreOptions{Metrics: m})
	s.Track("a.example.com")
	s.Track("b.example.com")
	s.Track("A.example.com.")
	if got := gaugeValue(t, reg, "portcullis_dns_names_tracked"); got != 2 {
		t.Errorf("names tracked = %v, want 2", got)
	}
	s.Untrack("a.example.com")
	if got := gaugeValue(t, reg, "portcullis_dns_names_tracked"); got != 1 {
		t.Errorf("names tracked = %v, want 1", got)
	}
}

// hangingResolver answers each name from a queue of results; a nil entry blocks until
// release is closed (a resolution stuck on a dead server).
type hangingResolver struct {
	mu      sync.Mutex
	results map[string][]*Result
	release chan struct{}
	blocked chan string
}

func (r *hangingResolver) Resolve(ctx context.Context, name string) Result {
	r.mu.Lock()
	q := r.results[name]
	next := q[0]
	if len(q) > 1 {
		r.results[name] = q[1:]
	}
	r.mu.Unlock()
	if next == nil {
		r.blocked <- name
		select {
		case <-r.release:
		case <-ctx.Done():
		}
		return Result{Name: name, State: egress.ResolutionFailed, Message: "timeout", Transient: true}
	}
	return *next
}

// TestStoreExpiresSetsWhileEveryWorkerIsStuck checks that the end of a stale grace, and
// of a TTL never refreshed, is enforced and announced even when no worker is free.
func TestStoreExpiresSetsWhileEveryWorkerIsStuck(t *testing.T) {
	ok := &Result{State: egress.ResolutionResolved, Vetted: addrs("93.184.216.34"), TTL: 60 * time.Second}
	fail := &Result{State: egress.ResolutionFailed, Message: "SERVFAIL", Transient: true}
	res := &hangingResolver{release: make(chan struct{}), blocked: make(chan string, 16), results: map[string][]*Result{
		"stale.example.com": {ok, fail, nil}, // goes stale; its retry hangs on the only worker
		"stuck.example.com": {ok, nil},       // its refresh waits for a worker that never comes
	}}
	t.Cleanup(func() { close(res.release) })
	clk := testingclock.NewFakeClock(epoch)
	cfg := DefaultConfig()
	s := NewStore(res, cfg, StoreOptions{Clock: clk, Workers: 1})
	s.jitter = func() float64 { return 0.5 }
	applied := make(chan string, 16)
	s.onApplied = func(n string) { applied <- n }
	runStore(t, s)
	wait := func(name string) {
		t.Helper()
		select {
		case n := <-applied:
			if n != name {
				t.Fatalf("applied %s, want %s", n, name)
			}
		case <-time.After(waitLimit):
			t.Fatalf("%s not applied", name)
		}
	}
	s.Track("stale.example.com")
	wait("stale.example.com")
	clk.Step(51 * time.Second)
	s.poke()
	wait("stale.example.com") // SERVFAIL: stale until +51s+5m
	if r, _ := s.Resolution("stale.example.com"); r.State != egress.ResolutionStale {
		t.Fatalf("stale.example.com is %s", r.State)
	}
	s.Track("stuck.example.com")
	wait("stuck.example.com") // resolved at +51s, refresh due at +102s
	<-s.Changes()
	s.Changed()
	clk.Step(51 * time.Second) // +102s: the stale retry (due +56s) hangs on the only worker
	s.poke()
	select {
	case <-res.blocked:
	case <-time.After(waitLimit):
		t.Fatal("no resolution hung")
	}

	clk.Step(5 * time.Minute) // +402s: stale.example.com's grace ended at +351s
	s.poke()
	waitFor(t, func() bool { return len(s.Changes()) > 0 })
	<-s.Changes()
	if got := s.Changed(); !slices.Equal(got, []string{"stale.example.com"}) {
		t.Fatalf("changed = %v, want the stale name dropped", got)
	}
	clk.Step(10 * time.Second) // +412s: stuck.example.com's TTL (+111s) + grace ended at +411s
	s.poke()
	waitFor(t, func() bool { return len(s.Changes()) > 0 })
	<-s.Changes()
	if got := s.Changed(); !slices.Equal(got, []string{"stuck.example.com"}) {
		t.Fatalf("changed = %v, want the never-refreshed name dropped", got)
	}
	for _, n := range []string{"stale.example.com", "stuck.example.com"} {
		if r, _ := s.Resolution(n); r.State != egress.ResolutionFailed || len(r.Vetted) != 0 {
			t.Errorf("%s: %s %v, want dropped", n, r.State, r.Vetted)
		}
	}
}

// TestStoreCountsEverySignalledChange: the manager drops a change signal whose count
// its last translation read (controllers/dns_wakes.go), so each signalled change must
// move the count first, and a refresh that changes nothing must not (the guard
// refreshes thousands of names a minute).
func TestStoreCountsEverySignalledChange(t *testing.T) {
	h := newStoreHarness(t, nil)
	const name = "api.example.com"
	h.srv.Set(name, name+". 60 IN A 93.184.216.34")
	h.store.Track(name)
	h.waitApplied(name)
	first := h.store.Signalled()
	if first != 1 {
		t.Fatalf("%d changes counted after the first answer, want 1", first)
	}
	h.expectChange(name)

	h.step(51 * time.Second) // a refresh with the same answer
	h.waitApplied(name)
	h.expectNoChange()
	if got := h.store.Signalled(); got != first {
		t.Errorf("%d changes counted after a refresh that changed nothing, want %d", got, first)
	}

	h.srv.Set(name, name+". 60 IN A 93.184.216.35")
	h.step(51 * time.Second)
	h.waitApplied(name)
	if got := h.store.Signalled(); got != first+1 {
		t.Errorf("%d changes counted after a new address, want %d", got, first+1)
	}
	h.expectChange(name)
}
