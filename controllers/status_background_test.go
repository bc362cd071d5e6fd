package controllers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStatusRunnerWritesTheLatestOnceFree: writes run one at a time; of the writes
// submitted while one runs only the latest runs next; a failure or a panic is reported
// and asks for a retry, and the runner goes on.
func TestStatusRunnerWritesTheLatestOnceFree(t *testing.T) {
	var mu sync.Mutex
	var ran, failures []string
	s := newStatusRunner(context.Background(), func(err error) {
		mu.Lock()
		failures = append(failures, err.Error())
		mu.Unlock()
	})
	release := make(chan struct{})
	write := func(name string, err error) func(context.Context) error {
		return func(context.Context) error {
			if name == "first" {
				<-release
			}
			mu.Lock()
			ran = append(ran, name)
			mu.Unlock()
			if name == "panics" {
				panic("nil map")
			}
			return err
		}
	}
	s.submit(write("first", nil))
	time.Sleep(20 * time.Millisecond) // "first" is running and blocked
	s.submit(write("superseded", nil))
	s.submit(write("latest", errors.New("conflict")))
	close(release)
	waitIdle(t, s)
	s.submit(write("panics", nil))
	waitIdle(t, s)

	mu.Lock()
	defer mu.Unlock()
	if strings.Join(ran, ",") != "first,latest,panics" {
		t.Errorf("ran %v; want first, then only the latest of those submitted meanwhile, then panics", ran)
	}
	if len(failures) != 2 || failures[0] != "conflict" || !strings.Contains(failures[1], "status write panicked: nil map") {
		t.Errorf("failures %q; want the conflict and the panic", failures)
	}
	select {
	case <-s.retry:
	case <-time.After(5 * statusRetryDelay):
		t.Error("a failed write did not ask the reconciler to run again")
	}
}

func waitIdle(t *testing.T, s *statusRunner) {
	t.Helper()
	select {
	case <-s.idleNow():
	case <-time.After(5 * time.Second):
		t.Fatal("the runner did not become idle")
	}
}
