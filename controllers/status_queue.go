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

// writeQueue runs writes on at most n goroutines and gathers their errors.
type writeQueue struct {
	slots chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	errs  []error
}

func newWriteQueue(n int) *writeQueue { return &writeQueue{slots: make(chan struct{}, n)} }

// do runs write once a slot is free. A panic in write becomes its error: it runs on a
// goroutine of its own, where controller-runtime's recovery does not reach, and a
// status write must not take the manager down.
func (q *writeQueue) do(write func() error) {
	q.slots <- struct{}{}
	q.wg.Add(1)
	go func() {
		defer func() { <-q.slots; q.wg.Done() }()
		if err := recoverToError(write); err != nil {
			q.mu.Lock()
			q.errs = append(q.errs, err)
			q.mu.Unlock()
		}
	}()
}

func recoverToError(write func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("status write panicked: %v", r)
		}
	}()
	return write()
}

// wait returns once every write is done, with their errors joined.
func (q *writeQueue) wait() error {
	q.wg.Wait()
	return errors.Join(q.errs...)
}
