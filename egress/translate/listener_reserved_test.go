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
// With the host provider, the ports other processes hold on the machine (HeldPorts) are
// refused the same way, naming the holder.
func TestReservedPortsRefuseListeners(t *testing.T) {
	held := map[uint32]string{16443: "kube-apiserver of portcullis local", 10080: "something at 10080"}
	tests := []struct {
		name      string
		port      gwapiv1.PortNumber
		wantUsing string // "": the listener is accepted
	}{
		{"the admin port", bootstrap.PodAdminPort, "Envoy's admin interface"},
		{"the readiness port", bootstrap.PodReadinessPort, "readiness listener"},
		{"the metrics port", bootstrap.PodMetricsPort, "metrics listener"},
		{"the port after them", bootstrap.PodMetricsPort + 1, ""},
		{"a port the local API server holds", 16443, "port 16443 is held by kube-apiserver of portcullis local on this machine"},
		{"a port below 1024, moved onto a held port", 80, "port 80 is bound as 10080, which something at 10080 holds"},
		{"a port nothing holds", 8080, ""},
	}
	g := &gatewayContext{gw: &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: "gw"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &translator{opts: Options{HeldPorts: held}}
			l := tr.validateListener(g, &gwapiv1.Listener{Name: "http", Port: tt.port, Protocol: gwapiv1.HTTPProtocolType})
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
