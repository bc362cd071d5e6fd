package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// timeoutRoutesYAML sends four hosts to one slow Backend: with a request timeout, with a
// backend request timeout alone, with "0s" (off), and with no timeouts (Envoy's 15 s);
// and two hosts to the same upstream as a gRPC Backend (h2c), with a request timeout
// and without (gRPC routes have no default timeout).
const timeoutRoutesYAML = `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: timeouts, namespace: apps}
spec:
  parentRefs: [{name: egress, namespace: gw}]
  hostnames: [request.e2e.test, backend.e2e.test, off.e2e.test, default.e2e.test, grpc.e2e.test, grpc-default.e2e.test]
  rules:
  - matches: [{headers: [{name: host, value: grpc.e2e.test}]}]
    timeouts: {request: 300ms}
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: slow-grpc}]
  - matches: [{headers: [{name: host, value: grpc-default.e2e.test}]}]
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: slow-grpc}]
  - matches: [{headers: [{name: host, value: request.e2e.test}]}]
    timeouts: {request: 300ms}
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: slow}]
  - matches: [{headers: [{name: host, value: backend.e2e.test}]}]
    timeouts: {backendRequest: 300ms}
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: slow}]
  - matches: [{headers: [{name: host, value: off.e2e.test}]}]
    timeouts: {request: 0s}
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: slow}]
  - backendRefs: [{group: egress.portcullis.io, kind: Backend, name: slow}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: slow, namespace: apps}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: slow.e2e.test}
    ports: [{name: http, port: {{.UpPort}}, protocol: HTTP}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: slow-grpc, namespace: apps}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: slow.e2e.test, protocol: {type: GRPC}}
    ports: [{name: http, port: {{.UpPort}}, protocol: HTTP}]
`

// TestRouteTimeoutsCutASlowBackend: an upstream that answers after 1.5 s gets 504 within
// the route's request or backend request timeout, also when the client asks Envoy for
// a longer one through x-envoy-upstream-rq-timeout-ms; with "0s" or no timeouts the
// answer arrives.
func TestRouteTimeoutsCutASlowBackend(t *testing.T) {
	up := testupstream.Start(t, testupstream.Options{Name: "slow"})
	d := startDataPath(t)
	d.apply(gatewayYAML+timeoutRoutesYAML, scenario{Port: d.port, UpPort: up.Port()}, resolved("slow.e2e.test", "127.0.0.1"))
	d.eventually(http.StatusOK, "default.e2e.test", "/")
	up.Delay(1500 * time.Millisecond)

	tests := []struct {
		host    string
		header  []string
		want    int
		fastest time.Duration // the answer may not come sooner (the upstream's delay)
		latest  time.Duration
	}{
		{host: "request.e2e.test", want: http.StatusGatewayTimeout, latest: time.Second},
		{host: "request.e2e.test", header: []string{"X-Envoy-Upstream-Rq-Timeout-Ms", "5000"}, want: http.StatusGatewayTimeout, latest: time.Second},
		{host: "backend.e2e.test", want: http.StatusGatewayTimeout, latest: time.Second},
		{host: "off.e2e.test", want: http.StatusOK, fastest: 1400 * time.Millisecond, latest: 5 * time.Second},
		{host: "default.e2e.test", want: http.StatusOK, fastest: 1400 * time.Millisecond, latest: 5 * time.Second},
		{host: "grpc.e2e.test", want: http.StatusGatewayTimeout, latest: time.Second},
		{host: "grpc-default.e2e.test", want: http.StatusOK, fastest: 1400 * time.Millisecond, latest: 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.host, tt.header), func(t *testing.T) {
			start := time.Now()
			code, body, _ := d.get(tt.host, "/", tt.header...)
			took := time.Since(start)
			if code != tt.want {
				t.Fatalf("status %d (%q) after %v, want %d", code, body, took, tt.want)
			}
			if took < tt.fastest || took > tt.latest {
				t.Fatalf("answered after %v, want between %v and %v", took, tt.fastest, tt.latest)
			}
		})
	}
}
