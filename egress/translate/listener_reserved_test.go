package translate

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
)

// TestReservedPortsRefuseListeners: a Gateway listener on a port every Envoy pod binds
// for itself would fail to bind there, so it is refused with PortUnavailable.
func TestReservedPortsRefuseListeners(t *testing.T) {
	tests := []struct {
		name      string
		port      gwapiv1.PortNumber
		wantUsing string // "": the listener is accepted
	}{
		{"the admin port", bootstrap.PodAdminPort, "Envoy's admin interface"},
		{"the readiness port", bootstrap.PodReadinessPort, "readiness listener"},
		{"the metrics port", bootstrap.PodMetricsPort, "metrics listener"},
		{"the port after them", bootstrap.PodMetricsPort + 1, ""},
	}
	g := &gatewayContext{gw: &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: "gw"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := (&translator{}).validateListener(g, &gwapiv1.Listener{Name: "http", Port: tt.port, Protocol: gwapiv1.HTTPProtocolType})
			if tt.wantUsing == "" {
				if l.problem != "" {
					t.Fatalf("refused: %s: %s", l.problem, l.problemMsg)
				}
				return
			}
			if l.problem != string(gwapiv1.ListenerReasonPortUnavailable) || !strings.Contains(l.problemMsg, tt.wantUsing) {
				t.Fatalf("problem %q %q; want PortUnavailable naming %q", l.problem, l.problemMsg, tt.wantUsing)
			}
		})
	}
}
