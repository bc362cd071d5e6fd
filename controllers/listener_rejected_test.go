package controllers

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestRejectedListenerDoesNotLoop: a Gateway listener on a port another process holds
// is rejected by Envoy. The Gateway says so, the listener's own Programmed says so,
// Envoy and the manager stay quiet (no resend loop), and freeing the port recovers.
func TestRejectedListenerDoesNotLoop(t *testing.T) {
	w := newWorld(t)
	w.port = xdstest.FreePort(t)
	w.envoy = w.startEnvoy("busy-gw/egress")
	squatter, err := net.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", w.port))
	if err != nil {
		t.Fatal(err)
	}
	defer squatter.Close()
	w.apply(egressGatewayYAML("busy-gw", w.port, "Same"))
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: "busy-gw"}}
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, "Programmed", "False", "Rejected")
	before := strings.Count(w.envoy.Log(), "\n")
	time.Sleep(3 * time.Second)
	if lines := strings.Count(w.envoy.Log(), "\n") - before; lines > 20 {
		t.Errorf("Envoy wrote %d log lines in 3 s while its listener stays rejected; last ones:\n%s", lines, tail(w.envoy.Log(), 10))
	}
	listener := func() []metav1.Condition {
		if len(gw.Status.Listeners) == 0 {
			return nil
		}
		return gw.Status.Listeners[0].Conditions
	}
	w.condition(gw, listener, "Programmed", "False", "Invalid")

	squatter.Close()
	xdstest.WaitFor(t, BindRetryInterval+15*time.Second, "the listener to serve once its port is free", func() error {
		return answerIs(hostAddr, w.port, "anything.test", 403, "denied: no route")
	})
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, "Programmed", "True", "Programmed")
	w.condition(gw, listener, "Programmed", "True", "Programmed")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
