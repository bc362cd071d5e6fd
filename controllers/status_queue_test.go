package controllers

import (
	"errors"
	"strings"
	"testing"
)

// TestWriteQueueGathersErrorsAndPanics: every write runs, failures and panics come back
// as errors from wait, and nothing escapes to crash the process.
func TestWriteQueueGathersErrorsAndPanics(t *testing.T) {
	q := newWriteQueue(2, nil)
	ran := make(chan int, 10)
	for i := range 10 {
		q.do(func() error {
			ran <- i
			switch i {
			case 3:
				return errors.New("conflict on object 3")
			case 7:
				panic("nil map in object 7")
			}
			return nil
		})
	}
	err := q.wait()
	if len(ran) != 10 {
		t.Fatalf("%d writes ran, want 10", len(ran))
	}
	if err == nil || !strings.Contains(err.Error(), "conflict on object 3") || !strings.Contains(err.Error(), "status write panicked: nil map in object 7") {
		t.Fatalf("wait() = %v, want both failures", err)
	}
}

// TestWriteQueueYields: once yield says so, the queue hands out no more writes, even if
// yield would say no again, and says it was cut short; the writes handed out before run.
func TestWriteQueueYields(t *testing.T) {
	asked := 0
	q := newWriteQueue(2, func() bool { asked++; return asked == 4 })
	ran := make(chan int, 10)
	for i := range 10 {
		q.do(func() error { ran <- i; return nil })
	}
	if err := q.wait(); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 3 || !q.cut {
		t.Fatalf("%d writes ran, cut %v; want 3 and true", len(ran), q.cut)
	}
	full := newWriteQueue(2, func() bool { return false })
	for range 10 {
		full.do(func() error { return nil })
	}
	if full.wait(); full.cut {
		t.Fatal("a queue whose yield never says yes was cut short")
	}
}
