package dnsguard

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/portcullis-io/portcullis/egress"
)

// DefaultWorkers is how many names the Store resolves at once by default.
const DefaultWorkers = 16

// NameResolver resolves one name; *Resolver is the real one.
type NameResolver interface {
	Resolve(ctx context.Context, name string) Result
}

// StoreOptions are the Store's knobs beyond Config.
type StoreOptions struct {
	// Clock drives refreshes and expiry (k8s.io/utils/clock; a FakeClock in tests).
	// Nil means the real clock.
	Clock clock.Clock
	// Workers bounds concurrent resolutions (DefaultWorkers when 0).
	Workers int
	// Metrics may be nil.
	Metrics *Metrics
}

// Store keeps every tracked name resolved: it refreshes a name at 80-90% of its clamped
// TTL, serves the last vetted set for the stale grace while resolution fails (state
// Stale) and then drops it (fail closed), and signals on Changes whenever a name's
// state, vetted set or blocked set changes. It is safe for concurrent use.
type Store struct {
	resolver NameResolver
	clock    clock.Clock
	workers  int
	grace    time.Duration
	minTTL   time.Duration
	maxTTL   time.Duration
	metrics  *Metrics
	jitter   func() float64 // in [0, 1)

	mu       sync.Mutex
	entries  map[string]*entry
	queue    dueQueue // refreshes
	expiries dueQueue // ends of vetted sets, enforced even when every worker is busy
	seq      uint64
	gen      uint64
	changed  map[string]struct{}
	// version counts changes to entries; snap is the Addresses answer made at
	// snapVersion, good until snapUntil; dirty are the names changed since (only while
	// there is a snap).
	version     uint64
	snap        egress.Addresses
	snapVersion uint64
	snapUntil   time.Time
	dirty       map[string]struct{}

	changes chan struct{}
	// signalled counts the changes signalled on changes (Signalled).
	signalled uint64
	// answered is closed, and replaced, whenever a name gets its first answer
	// (AwaitFirstAnswers).
	answered chan struct{}
	wake     chan struct{} // the scheduler
	expWake  chan struct{} // the expirer

	// Test hooks, set before Run: the scheduler is about to wait; a result was applied.
	onIdle    func(now time.Time)
	onApplied func(name string)
}

// entry is the Store's state for one tracked name.
type entry struct {
	name       string
	gen        uint64 // results of an older tracking of the name are dropped
	seq        uint64 // the live refresh dueItem
	due        time.Time
	expSeq     uint64 // the live expiry dueItem
	res        egress.Resolution
	inflight   bool
	dropped    bool // the stale set was dropped and resolution still fails
	failures   int  // consecutive resolutions without vetted addresses
	goodUntil  time.Time
	staleUntil time.Time
}

// job asks a worker to resolve one tracked name.
type job struct {
	name string
	gen  uint64
}

// NewStore returns a Store resolving through r with cfg's TTL bounds and stale grace.
func NewStore(r NameResolver, cfg Config, opts StoreOptions) *Store {
	s := &Store{
		resolver: r,
		clock:    opts.Clock,
		workers:  opts.Workers,
		grace:    cfg.StaleGrace,
		minTTL:   cfg.MinTTL,
		maxTTL:   cfg.MaxTTL,
		metrics:  opts.Metrics,
		jitter:   rand.Float64,
		entries:  map[string]*entry{},
		changed:  map[string]struct{}{},
		changes:  make(chan struct{}, 1),
		answered: make(chan struct{}),
		wake:     make(chan struct{}, 1),
		expWake:  make(chan struct{}, 1),
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	if s.workers <= 0 {
		s.workers = DefaultWorkers
	}
	return s
}

// Track starts resolving name (case-insensitive, trailing dot tolerated); it is Pending
// until its first resolution. Tracking a tracked name does nothing.
func (s *Store) Track(name string) {
	s.mu.Lock()
	s.trackLocked(NormalizeName(name))
	s.mu.Unlock()
	s.poke()
}

// Untrack stops resolving name and forgets it; a resolution in flight is discarded.
func (s *Store) Untrack(name string) {
	s.mu.Lock()
	s.untrackLocked(NormalizeName(name))
	s.mu.Unlock()
}

// SetNames tracks exactly names: new ones are added, the others untracked. It returns
// the names it began to track (normalized), Pending until their first answer.
func (s *Store) SetNames(names []string) (added []string) {
	want := map[string]bool{}
	for _, n := range names {
		want[NormalizeName(n)] = true
	}
	s.mu.Lock()
	for n := range s.entries {
		if !want[n] {
			s.untrackLocked(n)
		}
	}
	for n := range want {
		if s.trackLocked(n) {
			added = append(added, n)
		}
	}
	s.mu.Unlock()
	s.poke()
	return added
}

// AwaitFirstAnswers waits until none of names (normalized, as SetNames returns them)
// is Pending any more, at most max, and tells whether they all got their answer. A
// translation that waits a few milliseconds for a new Backend's first answer publishes
// it with its addresses at once, instead of publishing it without, translating again
// when the answer comes, and publishing again.
func (s *Store) AwaitFirstAnswers(ctx context.Context, names []string, max time.Duration) bool {
	if len(names) == 0 {
		return true
	}
	timer := time.NewTimer(max)
	defer timer.Stop()
	for {
		s.mu.Lock()
		pending, answered := s.anyPendingLocked(names), s.answered
		s.mu.Unlock()
		if !pending {
			return true
		}
		select {
		case <-answered:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (s *Store) anyPendingLocked(names []string) bool {
	for _, n := range names {
		if e := s.entries[n]; e != nil && e.res.State == egress.ResolutionPending {
			return true
		}
	}
	return false
}

// trackLocked starts tracking n and tells whether it was new.
func (s *Store) trackLocked(n string) bool {
	if _, ok := s.entries[n]; ok {
		return false
	}
	s.gen++
	s.touchLocked(n)
	e := &entry{name: n, gen: s.gen, res: egress.Resolution{State: egress.ResolutionPending}}
	s.entries[n] = e
	s.scheduleLocked(e, s.clock.Now())
	s.metrics.setTracked(len(s.entries))
	return true
}

func (s *Store) untrackLocked(n string) {
	if _, ok := s.entries[n]; ok {
		s.touchLocked(n)
		delete(s.entries, n)
		delete(s.changed, n)
		s.metrics.setTracked(len(s.entries))
	}
}

// Names returns the tracked names, sorted.
func (s *Store) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.entries))
	for n := range s.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Addresses returns every tracked name's resolution, keyed by normalized name. The map
// is shared: callers must not modify it. It is the same map from call to call until a
// name is tracked or untracked, an answer that changes what translation reads is
// applied or expired (patchedViewLocked: a refresh that only moves Expires is not one),
// or the clock reaches a deadline at which a view would change (a stale set's grace, a
// resolved set's TTL plus the grace): translating on every change used to copy ten
// thousand resolutions each time, and comparing two answers is a pointer comparison
// while nothing changed
// (SameAddresses). A new map is the last one with the names changed since patched in
// (refreshes alone change ten thousand names' entries every TTL, so at 10,000 names the
// map was made anew on nearly every call: 2 x 10,000 allocations); only a deadline
// passed makes it anew from every entry.
func (s *Store) Addresses() egress.Addresses {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	switch {
	case s.snap != nil && s.snapVersion == s.version && now.Before(s.snapUntil):
	case s.snap != nil && now.Before(s.snapUntil):
		s.snap, s.snapUntil = s.patchedViewLocked(now)
	default:
		s.snap, s.snapUntil = s.viewAllLocked(now)
	}
	s.snapVersion = s.version
	clear(s.dirty)
	return s.snap
}

// viewAllLocked views every entry, and says until when the view holds.
func (s *Store) viewAllLocked(now time.Time) (egress.Addresses, time.Time) {
	out := make(egress.Addresses, len(s.entries))
	until := farFuture
	for n, e := range s.entries {
		out[n] = s.viewLocked(e, now)
		until = s.holdsUntil(e, now, until)
	}
	return out, until
}

// patchedViewLocked is the last view with the dirty names viewed again; the others'
// views hold until the last view's deadline, which now has not reached. A dirty name
// whose view says the same to translation as the last view's (egress.SameForTranslation:
// a refresh that only moved Expires) keeps the last view's entry, and when every dirty
// name does, the last view is the view: at 10,000 names with short TTLs a refresh came
// between nearly any two reconciles, and each copied the whole map (1.5 MB) for
// translation to compare it name by name and find nothing new. Expires in a view is
// therefore as of the answer that last changed the name's view (Resolution gives the
// entry's own); the view's deadline still counts the entry's new deadlines.
func (s *Store) patchedViewLocked(now time.Time) (egress.Addresses, time.Time) {
	var out egress.Addresses // the last view's copy, made at the first entry that differs
	until := s.snapUntil
	for n := range s.dirty {
		e, tracked := s.entries[n]
		last, had := s.snap[n]
		switch {
		case !tracked && had:
			out = copyOnce(out, s.snap)
			delete(out, n)
		case tracked:
			until = s.holdsUntil(e, now, until)
			if v := s.viewLocked(e, now); !had || !egress.SameForTranslation(last, v) {
				out = copyOnce(out, s.snap)
				out[n] = v
			}
		}
	}
	if out == nil {
		return s.snap, until
	}
	return out, until
}

// copyOnce is out, or a copy of from when out is nil.
func copyOnce(out, from egress.Addresses) egress.Addresses {
	if out == nil {
		return maps.Clone(from)
	}
	return out
}

// holdsUntil is until, or e's view deadline if that comes first.
func (s *Store) holdsUntil(e *entry, now, until time.Time) time.Time {
	if d, ok := viewDeadline(e, s.grace); ok && now.Before(d) && d.Before(until) {
		return d
	}
	return until
}

// touchLocked records that name's entry changed (or went): a new version, and a name
// the next Addresses views again.
func (s *Store) touchLocked(name string) {
	s.version++
	if s.snap != nil {
		if s.dirty == nil {
			s.dirty = map[string]struct{}{}
		}
		s.dirty[name] = struct{}{}
	}
}

// farFuture is the deadline of a view no clock changes.
var farFuture = time.Unix(1<<62, 0)

// viewDeadline is when the clock alone changes viewLocked's answer for e, if ever.
func viewDeadline(e *entry, grace time.Duration) (time.Time, bool) {
	switch e.res.State {
	case egress.ResolutionStale:
		return e.staleUntil, true
	case egress.ResolutionResolved:
		return e.goodUntil.Add(grace), true
	}
	return time.Time{}, false
}

// SameAddresses tells whether two answers of Addresses are the same map: then they are
// equal without a look at their entries.
func SameAddresses(a, b egress.Addresses) bool {
	return a != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Resolution returns a copy of name's resolution and whether name is tracked.
func (s *Store) Resolution(name string) (egress.Resolution, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[NormalizeName(name)]
	if !ok {
		return egress.Resolution{}, false
	}
	return s.viewLocked(e, s.clock.Now()), true
}

// viewLocked copies e's resolution, dropping a vetted set past its deadline even if
// the scheduler has not got to it yet: readers never see an expired set.
func (s *Store) viewLocked(e *entry, now time.Time) egress.Resolution {
	r := e.res
	switch {
	case r.State == egress.ResolutionStale && !now.Before(e.staleUntil):
		return s.droppedResolution(r.Message)
	case r.State == egress.ResolutionResolved && !now.Before(e.goodUntil.Add(s.grace)):
		return s.droppedResolution("not refreshed since the TTL ended")
	}
	r.Vetted = slices.Clone(r.Vetted)
	r.Blocked = slices.Clone(r.Blocked)
	return r
}

func (s *Store) droppedResolution(msg string) egress.Resolution {
	return egress.Resolution{
		State:   egress.ResolutionFailed,
		Message: joinNotes(msg, fmt.Sprintf("the last vetted addresses were dropped after the %v stale grace", s.grace)),
	}
}

// Changes receives a value after one or more names changed state, vetted set or
// blocked set. Signals are coalesced and never block the Store; call Changed for the
// names, or Addresses for the new view.
func (s *Store) Changes() <-chan struct{} { return s.changes }

// Signalled counts the changes the Store has signalled on Changes so far. Each is
// counted before its signal, so an Addresses view taken after reading the count holds
// every change signalled up to it. (A refresh that only moves deadlines counts none.)
func (s *Store) Signalled() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signalled
}

// Changed returns the names that changed since the last call, sorted, and forgets them.
func (s *Store) Changed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.changed))
	for n := range s.changed {
		names = append(names, n)
	}
	clear(s.changed)
	sort.Strings(names)
	return names
}

func (s *Store) markChangedLocked(name string) {
	s.changed[name] = struct{}{}
	s.signalled++
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

// poke wakes the scheduler and the expirer to look at the clock and queues again.
func (s *Store) poke() {
	for _, c := range []chan struct{}{s.wake, s.expWake} {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (s *Store) scheduleLocked(e *entry, due time.Time) {
	s.seq++
	e.seq, e.due = s.seq, due
	s.queue.push(dueItem{due: due, name: e.name, seq: e.seq})
}

// scheduleExpiryLocked makes the expirer check e at `at`, replacing any earlier check.
func (s *Store) scheduleExpiryLocked(e *entry, at time.Time) {
	s.seq++
	e.expSeq = s.seq
	s.expiries.push(dueItem{due: at, name: e.name, seq: e.expSeq})
	select {
	case s.expWake <- struct{}{}:
	default:
	}
}

// cancelExpiryLocked forgets e's pending expiry check.
func (s *Store) cancelExpiryLocked(e *entry) {
	s.seq++
	e.expSeq = s.seq
}
