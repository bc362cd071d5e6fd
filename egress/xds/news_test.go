package xds

import (
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"
)

// TestNewsCountsWhatNoPublishMade walks a Gateway through a publish, an Envoy's
// connection, acknowledgement and rejection, a resend, its disconnection and the
// Gateway's removal: News moves with each but the publishes. (That it moves before the
// notice goes out is markNews's order, not checked here.)
func TestNewsCountsWhatNoPublishMade(t *testing.T) {
	s := New(testr.New(t))
	var e *fakeEnvoy
	steps := []struct {
		name string
		do   func()
		news bool
	}{
		{"a first publish", func() { publishHello(t, s, "one") }, false},
		{"an Envoy connects", func() { e = connect(t, s, 1, "envoy-1"); e.subscribe(resource.ClusterType, "") }, true},
		{"it accepts the clusters", func() { e.deliver(s.Status(testGateway).Version, resource.ClusterType) }, true},
		{"a new publish", func() { publishHello(t, s, "two") }, false},
		{"it rejects the listeners", func() {
			e.respond(resource.ListenerType, s.Status(testGateway).Version)
			e.nack(resource.ListenerType, "", "bad listener")
		}, true},
		{"the Gateway is resent", func() {
			if _, err := s.Resend(testGateway); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"the Envoy disconnects", func() { e.close() }, true},
		{"the Gateway is removed", func() { s.Remove(testGateway) }, true},
	}
	for _, step := range steps {
		before := s.News()
		step.do()
		if moved := s.News() != before; moved != step.news {
			t.Errorf("%s: News moved %v, want %v (from %d to %d)", step.name, moved, step.news, before, s.News())
		}
	}
}
