//go:build linux

package operator

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// TestKubectlAppliedGatewayCarriesMTLSTraffic is the main path: objects applied
// with kubectl, `kubectl wait --for=condition=Programmed` on the Gateway and both
// Backends (done by startWorld), then traffic through the Envoy the manager started
// reaches both mTLS upstreams with the client certificate and each Backend's SNI.
func TestKubectlAppliedGatewayCarriesMTLSTraffic(t *testing.T) {
	w := startWorld(t, "traffic", 50, 50)
	if got := mustKubectl(t, "", "get", "gateway/egress", "-n", w.fx.GatewayNS, "-o", "jsonpath={.status.addresses[*].value}"); got != "127.0.0.1" {
		t.Errorf("Gateway status.addresses = %q, want 127.0.0.1 (the host provider's listener address)", got)
	}
	w.waitServing(t)
	answers := w.sendMany(t, 60)

	for _, up := range []struct {
		server *testupstream.Server
		sni    string
	}{{w.alpha, w.fx.AlphaHost}, {w.beta, w.fx.BetaHost}} {
		n := checkUpstreamSaw(t, up.server, answers, up.sni)
		if n == 0 {
			t.Errorf("upstream %s got none of 60 requests split 50/50", up.sni)
		}
		t.Logf("upstream %s answered %d of 60 requests", up.sni, n)
	}
	checkNoKeyInLogs(t, w)
}

// checkUpstreamSaw checks every answer from this upstream: it came over TLS with the
// expected SNI and the gateway's client certificate. It returns how many there were.
func checkUpstreamSaw(t *testing.T, up *testupstream.Server, answers []answer, wantSNI string) int {
	t.Helper()
	n := 0
	for _, a := range answers {
		seen, ok := seenAt(up, a.path)
		if !ok {
			continue
		}
		n++
		if !seen.TLS || seen.SNI != wantSNI || seen.ClientCN != clientCN {
			t.Errorf("upstream saw %s with TLS=%v SNI=%q client=%q; want TLS, SNI %q, client %q",
				a.path, seen.TLS, seen.SNI, seen.ClientCN, wantSNI, clientCN)
		}
	}
	return n
}

// checkNoKeyInLogs proves the client certificate's private key, which travels from the
// Secret to Envoy by SDS, is written to neither the manager's log nor Envoy's.
func checkNoKeyInLogs(t *testing.T, w *world) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(w.fx.ClientKey)), "\n")
	body := lines[1] // the first base64 line of the PEM body
	encoded := base64.StdEncoding.EncodeToString(w.fx.ClientKey)[:40]
	logs := []struct{ name, text, marker string }{
		{"manager", w.mgr.log(), "Envoy started"},
		{"Envoy", w.mgr.envoyLogs(), "starting main dispatch loop"},
	}
	for _, l := range logs {
		if !strings.Contains(l.text, l.marker) {
			t.Errorf("the %s log lacks %q; it is not the log of a running process and the check would prove nothing", l.name, l.marker)
		}
		if strings.Contains(l.text, body) || strings.Contains(l.text, encoded) {
			t.Errorf("the %s log contains the client certificate's private key", l.name)
		}
	}
}

// TestKubectlWaitTellsProgrammedApart checks that `kubectl wait` on our conditions is
// not vacuous: a Backend no route references is reported Programmed=False, so waiting
// for Programmed times out while waiting for Programmed=False succeeds.
func TestKubectlWaitTellsProgrammedApart(t *testing.T) {
	w := startWorld(t, "wait", 100, 0)
	orphan := render(t, `
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: orphan, namespace: {{.AppNS}}}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: {{.BetaHost}}}
    ports: [{name: http, port: 80, protocol: HTTP}]
`, w.fx)
	mustKubectl(t, orphan, "apply", "-f", "-")
	t.Cleanup(func() { _, _ = kubectl(t, orphan, "delete", "--ignore-not-found", "--wait=false", "-f", "-") })

	tests := []struct {
		name, namespace, object, condition, timeout string
		wantMet                                     bool
	}{
		{"a referenced Backend is Programmed", w.fx.AppNS, "backend/alpha", "Programmed", "60s", true},
		{"a Backend no route references is Programmed=False", w.fx.AppNS, "backend/orphan", "Programmed=False", "60s", true},
		{"waiting for an unreferenced Backend to be Programmed times out", w.fx.AppNS, "backend/orphan", "Programmed", "3s", false},
		{"the Gateway is Programmed", w.fx.GatewayNS, "gateway/egress", "Programmed", "60s", true},
		{"the Gateway is not Programmed=False", w.fx.GatewayNS, "gateway/egress", "Programmed=False", "3s", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := kubectl(t, "", "wait", "-n", tt.namespace, "--for=condition="+tt.condition, tt.object, "--timeout="+tt.timeout)
			met := err == nil && strings.Contains(out, "condition met")
			if met != tt.wantMet {
				t.Fatalf("kubectl wait --for=condition=%s %s: err=%v output %q; want condition met = %v", tt.condition, tt.object, err, out, tt.wantMet)
			}
		})
	}
}
