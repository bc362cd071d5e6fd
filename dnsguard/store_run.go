package dnsguard

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/portcullis-io/portcullis/egress"
)

// Run resolves and refreshes the tracked names until ctx is cancelled; it returns nil
// once every worker has stopped.
func (s *Store) Run(ctx context.Context) error {
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range s.workers {
		wg.Go(func() { s.work(ctx, jobs) })
	}
	wg.Go(func() { s.expireLoop(ctx) })
	defer func() {
		close(jobs)
		wg.Wait()
	}()
	for {
		j, now, wait, ok := s.next()
		if ok {
			select {
			case jobs <- j:
				continue
			case <-ctx.Done():
				s.release(j)
				return nil
			}
		}
		var timer clock.Timer
		var fire <-chan time.Time
		if wait > 0 {
			timer = s.clock.NewTimer(wait)
			fire = timer.C()
		}
		if s.onIdle != nil {
			s.onIdle(now)
		}
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// next pops the next due refresh, or says how long after now one is due (0: none).
func (s *Store) next() (j job, now time.Time, wait time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now = s.clock.Now()
	for s.queue.Len() > 0 {
		it := s.queue.peek()
		e := s.entries[it.name]
		if e == nil || e.seq != it.seq || e.inflight {
			s.queue.pop()
			continue
		}
		if it.due.After(now) {
			return job{}, now, it.due.Sub(now), false
		}
		s.queue.pop()
		s.expireStaleLocked(e, now)
		e.inflight = true
		return job{name: e.name, gen: e.gen}, now, 0, true
	}
	return job{}, now, 0, false
}

func (s *Store) work(ctx context.Context, jobs <-chan job) {
	for j := range jobs {
		if !s.tracked(j) {
			continue
		}
		res := s.resolver.Resolve(ctx, j.name)
		if ctx.Err() != nil {
			// A resolution cut short by shutdown says nothing about the name.
			s.release(j)
			continue
		}
		s.apply(j, res)
		if s.onApplied != nil {
			s.onApplied(j.name)
		}
		s.poke()
	}
}

func (s *Store) tracked(j job) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[j.name]
	return e != nil && e.gen == j.gen
}

// release puts back a job that was not resolved, due at once.
func (s *Store) release(j job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[j.name]; e != nil && e.gen == j.gen {
		e.inflight = false
		s.scheduleLocked(e, s.clock.Now())
	}
}

// apply records a resolution result and schedules the next one.
func (s *Store) apply(j job, res Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[j.name]
	if e == nil || e.gen != j.gen {
		return
	}
	now := s.clock.Now()
	e.inflight = false
	s.touchLocked(e.name) // every branch below changes the resolution or its deadlines
	old := e.res
	switch {
	case res.State == egress.ResolutionResolved:
		e.failures, e.staleUntil, e.dropped = 0, time.Time{}, false
		e.goodUntil = now.Add(res.TTL)
		e.res = res.Resolution(e.goodUntil)
		keepSince(e.res.Vetted, old.Vetted, now)
		s.scheduleLocked(e, now.Add(s.refreshDelay(res.TTL)))
		s.scheduleExpiryLocked(e, e.goodUntil.Add(s.grace))
	case res.Final:
		// The name itself is refused: it is never resolved again.
		e.res = res.Resolution(time.Time{})
		s.cancelExpiryLocked(e)
	case res.Transient && len(old.Vetted) > 0:
		s.serveStaleLocked(e, old, res, now)
	case res.Transient && e.dropped:
		// Still failing after the stale set was dropped: keep saying so.
		e.failures++
		e.res = s.droppedResolution(res.Message)
		s.scheduleLocked(e, now.Add(s.retryDelay(e.failures, 0)))
	default:
		e.failures, e.dropped = e.failures+1, false
		e.goodUntil, e.staleUntil = time.Time{}, time.Time{}
		e.res = res.Resolution(time.Time{})
		s.cancelExpiryLocked(e)
		s.scheduleLocked(e, now.Add(s.retryDelay(e.failures, res.TTL)))
	}
	if resolutionChanged(old, e.res) {
		s.markChangedLocked(e.name)
	}
	if old.State == egress.ResolutionPending && e.res.State != egress.ResolutionPending {
		close(s.answered)
		s.answered = make(chan struct{})
	}
}

// serveStaleLocked keeps the last vetted set while resolution fails, until the grace
// that started with the first failure ends.
func (s *Store) serveStaleLocked(e *entry, old egress.Resolution, res Result, now time.Time) {
	e.failures++
	if e.staleUntil.IsZero() {
		e.staleUntil = now.Add(s.grace)
		s.scheduleExpiryLocked(e, e.staleUntil)
	}
	if !now.Before(e.staleUntil) {
		e.goodUntil, e.staleUntil, e.dropped = time.Time{}, time.Time{}, true
		e.res = s.droppedResolution(res.Message)
		s.cancelExpiryLocked(e)
		s.scheduleLocked(e, now.Add(s.retryDelay(e.failures, 0)))
		return
	}
	e.res = egress.Resolution{State: egress.ResolutionStale, Message: res.Message, Blocked: old.Blocked}
	for _, v := range old.Vetted {
		e.res.Vetted = append(e.res.Vetted, egress.VettedAddress{IP: v.IP, Expires: e.staleUntil, Since: v.Since})
	}
	s.scheduleLocked(e, minTime(now.Add(s.retryDelay(e.failures, 0)), e.staleUntil))
}

// expireStaleLocked drops a vetted set whose time is up: a stale set at the end of its
// grace, or a resolved set not refreshed by the end of its TTL plus the grace.
func (s *Store) expireStaleLocked(e *entry, now time.Time) {
	var msg string
	switch {
	case e.res.State == egress.ResolutionStale && !now.Before(e.staleUntil):
		msg = e.res.Message
	case e.res.State == egress.ResolutionResolved && !now.Before(e.goodUntil.Add(s.grace)):
		msg = "not refreshed since the TTL ended"
	default:
		return
	}
	e.res = s.droppedResolution(msg)
	e.goodUntil, e.staleUntil, e.dropped = time.Time{}, time.Time{}, true
	s.touchLocked(e.name)
	s.cancelExpiryLocked(e)
	s.markChangedLocked(e.name)
}

// expireLoop drops vetted sets when their time is up, independently of the workers, so
// a DNS outage that keeps every worker waiting cannot stretch the stale grace.
func (s *Store) expireLoop(ctx context.Context) {
	for {
		wait := s.expireDue()
		var timer clock.Timer
		var fire <-chan time.Time
		if wait > 0 {
			timer = s.clock.NewTimer(wait)
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-s.expWake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// expireDue applies every expiry due now and says how long until the next (0: none).
func (s *Store) expireDue() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for s.expiries.Len() > 0 {
		it := s.expiries.peek()
		e := s.entries[it.name]
		if e == nil || e.expSeq != it.seq {
			s.expiries.pop()
			continue
		}
		if it.due.After(now) {
			return it.due.Sub(now)
		}
		s.expiries.pop()
		s.expireStaleLocked(e, now)
	}
	return 0
}

// refreshDelay is 80-90% of the (clamped) TTL, at least a second.
func (s *Store) refreshDelay(ttl time.Duration) time.Duration {
	d := time.Duration(float64(ttl) * (0.8 + 0.1*s.jitter()))
	return max(d, time.Second)
}

// retryDelay follows a failed or negative resolution: 80-90% of the answer's TTL when
// records came back, else an exponential backoff from the minimum TTL to the maximum.
func (s *Store) retryDelay(failures int, ttl time.Duration) time.Duration {
	if ttl > 0 {
		return s.refreshDelay(ttl)
	}
	base := max(s.minTTL, time.Second)
	d := base << min(max(failures-1, 0), 20)
	d = min(d, max(s.maxTTL, base))
	return max(time.Duration(float64(d)*(0.9+0.2*s.jitter())), time.Second)
}

// resolutionChanged compares what the translator acts on: the state and the vetted and
// blocked sets (not expiry times or messages).
func resolutionChanged(a, b egress.Resolution) bool {
	if a.State != b.State || len(a.Vetted) != len(b.Vetted) || len(a.Blocked) != len(b.Blocked) {
		return true
	}
	for i := range a.Vetted {
		if a.Vetted[i].IP != b.Vetted[i].IP {
			return true
		}
	}
	return !slices.Equal(a.Blocked, b.Blocked)
}

// keepSince dates each vetted address: from the previous set when it was there already
// (a refresh of the same answer), now when it is new.
func keepSince(vetted, previous []egress.VettedAddress, now time.Time) {
	for i := range vetted {
		vetted[i].Since = now
		for _, p := range previous {
			if p.IP == vetted[i].IP && !p.Since.IsZero() {
				vetted[i].Since = p.Since
			}
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
