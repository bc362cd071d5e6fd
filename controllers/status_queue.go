package controllers

import (
	"errors"
	"fmt"
	"sync"
)

// statusWorkers is how many status writes run at once. Each write is a round trip to
// the API server and an etcd write; one at a time, 1,000 new Backends and routes took
// 30–50 s to show their conditions, and the reconciler handled no change meanwhile.
// Eight keep the API server's priority-and-fairness share of one controller modest.
const statusWorkers = 8

// writeQueue runs writes on n worker goroutines and gathers their errors. The workers
// live as long as the queue: most writes turn out to have nothing to write, and a
// goroutine per write spent more on starting and growing stacks than on the check.
//
// yield, when set, is asked before each write is handed out; once it says yes, the queue
// takes no more writes (do drops them) and cut reports it. One goroutine calls do.
type writeQueue struct {
	jobs  chan func() error
	wg    sync.WaitGroup
	mu    sync.Mutex
	errs  []error
	yield func() bool
	cut   bool
	// dropped counts the writes do dropped once the queue had yielded.
	dropped int
}

func newWriteQueue(n int, yield func() bool) *writeQueue {
	q := &writeQueue{jobs: make(chan func() error), yield: yield}
	q.wg.Add(n)
	for range n {
		go q.work()
	}
	return q
}

// work runs writes until wait closes the queue. A panic in a write becomes its error:
// the workers are goroutines of their own, where controller-runtime's recovery does not
// reach, and a status write must not take the manager down.
func (q *writeQueue) work() {
	defer q.wg.Done()
	for write := range q.jobs {
		if err := recoverToError(write); err != nil {
			q.mu.Lock()
			q.errs = append(q.errs, err)
			q.mu.Unlock()
		}
	}
}

// do runs write once a worker is free, unless the queue yielded.
func (q *writeQueue) do(write func() error) {
	if q.cut || (q.yield != nil && q.yield()) {
		q.cut = true
		q.dropped++
		return
	}
	q.jobs <- write
}

// inTurns hands out the writes of the lists one of each list in turn (the first of
// each, then the second of each, ...), so that a write that yields has stored some of
// every list, not only of the first.
func (q *writeQueue) inTurns(lists ...[]func() error) {
	for i := 0; ; i++ {
		more := false
		for _, l := range lists {
			if i < len(l) {
				q.do(l[i])
				more = true
			}
		}
		if !more {
			return
		}
	}
}

func recoverToError(write func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("status write panicked: %v", r)
		}
	}()
	return write()
}

// wait returns once every write is done, with their errors joined; the queue takes no
// more writes.
func (q *writeQueue) wait() error {
	close(q.jobs)
	q.wg.Wait()
	return errors.Join(q.errs...)
}
