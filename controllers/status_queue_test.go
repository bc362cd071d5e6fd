package controllers

import (
	"errors"
	"strings"
	"testing"
)

// TestWriteQueueGathersErrorsAndPanics: every write runs, failures and panics come back
// as errors from wait, and nothing escapes to crash the process.
func TestWriteQueueGathersErrorsAndPanics(t *testing.T) {
	q := newWriteQueue(2)
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
