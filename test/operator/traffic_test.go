//go:build linux

package operator

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// pollInterval is the pause between two requests while waiting for an edit to show.
const pollInterval = 10 * time.Millisecond

// probeCounter numbers requests, so each has a path of its own (/probe/N) by which the
// upstream's record of it is found.
type probeCounter struct{ n atomic.Int64 }

func (p *probeCounter) next() string { return fmt.Sprintf("/probe/%d", p.n.Add(1)) }

// client opens a new connection per request, so nothing a test sees depends on which
// Envoy worker or connection a keep-alive pinned it to.
var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// answer is what one request through the Gateway got.
type answer struct {
	path     string
	status   int
	upstream string // X-Upstream: the name of the upstream that answered
	err      error
}

// send makes one request through the Gateway's listener with the route's Host.
func (w *world) send() answer {
	a := answer{path: w.probes.next()}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", w.fx.Port, a.path), nil)
	if err != nil {
		a.err = err
		return a
	}
	req.Host = w.fx.RouteHost
	resp, err := client.Do(req)
	if err != nil {
		a.err = err
		return a
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	a.status, a.upstream = resp.StatusCode, resp.Header.Get("X-Upstream")
	return a
}

// ok is whether an upstream answered 200.
func (a answer) ok() bool { return a.err == nil && a.status == http.StatusOK && a.upstream != "" }

func (a answer) String() string {
	if a.err != nil {
		return fmt.Sprintf("%s: %v", a.path, a.err)
	}
	return fmt.Sprintf("%s: %d from %q", a.path, a.status, a.upstream)
}

// waitServing waits until a request through the Gateway gets a 200 from an upstream.
func (w *world) waitServing(t *testing.T) {
	t.Helper()
	xdstest.WaitFor(t, 20*time.Second, "a 200 through the Gateway", func() error {
		if a := w.send(); !a.ok() {
			return fmt.Errorf("last answer %v", a)
		}
		return nil
	})
}

// sendMany sends n requests and fails the test on any that no upstream answered with 200.
func (w *world) sendMany(t *testing.T, n int) []answer {
	t.Helper()
	out := make([]answer, 0, n)
	for range n {
		a := w.send()
		if !a.ok() {
			t.Fatalf("request %v, want a 200 from an upstream", a)
		}
		out = append(out, a)
	}
	return out
}

// poll is what polling saw from an edit until the first request that showed it.
type poll struct {
	elapsed  time.Duration // from the edit's kubectl returning to the response that showed it
	requests int           // requests sent, the showing one included
	failed   []answer      // answers without a 200 from an upstream on the way
}

// pollUntil sends a request every pollInterval from start until shows reports that an
// answer reflects the edit, for at most timeout (well past the limit asserted, so a slow
// edit is measured, not cut off).
func (w *world) pollUntil(start time.Time, timeout time.Duration, shows func(answer) bool) (poll, bool) {
	var p poll
	for {
		a := w.send()
		p.requests++
		p.elapsed = time.Since(start)
		if !a.ok() {
			p.failed = append(p.failed, a)
		} else if shows(a) {
			return p, true
		}
		if p.elapsed > timeout {
			return p, false
		}
		time.Sleep(pollInterval)
	}
}

// seenAt returns the upstream's record of the request with this path.
func seenAt(up *testupstream.Server, path string) (testupstream.Seen, bool) {
	seen := up.Requests()
	for i := len(seen) - 1; i >= 0; i-- {
		if seen[i].Path == path {
			return seen[i], true
		}
	}
	return testupstream.Seen{}, false
}
