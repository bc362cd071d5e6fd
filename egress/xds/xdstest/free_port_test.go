package xdstest

import (
	"testing"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/internal/localenv/demo"
)

// TestFreePortSkipsPortsTestsMustNotGet: the ports an Envoy pod binds and the demo
// API's fixed port are never handed out; FreePort's own range is.
func TestFreePortSkipsPortsTestsMustNotGet(t *testing.T) {
	if demoAPIPort != demo.APIPort {
		t.Fatalf("demoAPIPort is %d, the demo's API port %d", demoAPIPort, demo.APIPort)
	}
	for _, tc := range []struct {
		name     string
		port     int
		reserved bool
	}{
		{"Envoy pod admin", bootstrap.PodAdminPort, true},
		{"Envoy pod readiness", bootstrap.PodReadinessPort, true},
		{"Envoy pod metrics", bootstrap.PodMetricsPort, true},
		{"the demo API, named by the README", demo.APIPort, true},
		{"the demo API's neighbour", demo.APIPort + 1, false},
		{"the lowest port FreePort picks", freePortFloor, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reservedPort(tc.port); got != tc.reserved {
				t.Errorf("reservedPort(%d) = %v, want %v", tc.port, got, tc.reserved)
			}
		})
	}
}

// TestFreePortNeverRepeatsAPort: 300 random picks among some 28,000 ports repeat one
// most of the time (the birthday bound); a test asks for several ports before it binds
// any, so FreePort must not hand out a port twice.
func TestFreePortNeverRepeatsAPort(t *testing.T) {
	seen := map[uint32]int{}
	for i := range 300 {
		p := FreePort(t)
		if j, ok := seen[p]; ok {
			t.Fatalf("pick %d gave port %d, as pick %d did", i, p, j)
		}
		seen[p] = i
	}
}
