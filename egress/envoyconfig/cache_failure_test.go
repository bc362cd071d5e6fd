package envoyconfig

import (
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// TestCacheKeepsFailingAnInvalidBuild: a build that fails validation leaves nothing
// behind that a later build of the same IR would reuse as valid; it fails every time,
// as a cold build does, and the valid IR after it builds.
func TestCacheKeepsFailingAnInvalidBuild(t *testing.T) {
	c := NewCache()
	broken := validGateway()
	route := &broken.Listeners[0].VirtualHosts[0].Routes[0]
	route.RequestHeaders = &ir.HeaderMutation{Set: []ir.Header{{Name: "x-team", Value: "blue\r\nx-injected: yes"}}}
	if _, err := c.Build(validGateway(), Options{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.Build(broken, Options{}); err == nil || !strings.Contains(err.Error(), "HeaderValue") {
			t.Fatalf("build %d of the invalid IR: %v, want the validation error a cold build gives", i+1, err)
		}
	}
	if _, err := c.Build(validGateway(), Options{}); err != nil {
		t.Fatalf("the valid IR after a failure: %v", err)
	}
}
