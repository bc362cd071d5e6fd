package controllers

import (
	"context"
	"sync"
	"time"
)

// statusRunner writes statuses in the background, one write of every status at a time;
// a write submitted while one runs waits, and a newer one replaces it before it starts.
//
// The reconciler used to wait for its status writes before it could handle the next
// change. At 1,000 new Backends and routes one write of every status took 2.4 s of API
// server round trips (the manager's CPU was idle), and the configuration carrying the
// next change, the ACK that follows it and the Programmed conditions all waited behind
// it. Now translation and publishing go on while statuses are written, and a status
// that changes again before its write starts (Pending, then Programmed) is written once.
// A write that fails is logged and the reconciler is asked to run again soon (retry),
// which submits the statuses again.
type statusRunner struct {
	// ctx is the manager's: writes outlive the reconcile that submitted them.
	ctx   context.Context
	retry chan struct{}
	fail  func(error)

	mu      sync.Mutex
	next    func(context.Context) error
	running bool
	// idle is closed when no write runs or waits (tests and benchmarks).
	idle chan struct{}
}

// statusRetryDelay is how long after a failed write the reconciler is asked to write
// again.
const statusRetryDelay = time.Second

func newStatusRunner(ctx context.Context, fail func(error)) *statusRunner {
	idle := make(chan struct{})
	close(idle)
	return &statusRunner{ctx: ctx, retry: make(chan struct{}, 1), fail: fail, idle: idle}
}

// submit schedules write, replacing a write that has not started.
func (s *statusRunner) submit(write func(context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = write
	if !s.running {
		s.running = true
		s.idle = make(chan struct{})
		go s.run()
	}
}

func (s *statusRunner) run() {
	for {
		s.mu.Lock()
		write := s.next
		s.next = nil
		if write == nil || s.ctx.Err() != nil {
			s.running = false
			close(s.idle)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if err := recoverToError(func() error { return write(s.ctx) }); err != nil && s.ctx.Err() == nil {
			s.fail(err)
			time.AfterFunc(statusRetryDelay, func() {
				select {
				case s.retry <- struct{}{}:
				default:
				}
			})
		}
	}
}

// idleNow is closed once no write runs or waits.
func (s *statusRunner) idleNow() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idle
}
