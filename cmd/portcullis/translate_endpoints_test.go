package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serviceBackendYAML routes to a Backend whose Service has a pod endpoint and a node
// endpoint (a private address outside the pod range).
const serviceBackendYAML = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: gw}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: db, namespace: apps}
spec:
  parentRefs: [{name: egress, namespace: gw}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: db}]}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: db, namespace: apps}
spec:
  destination:
    type: Service
    kubernetesService: {name: db}
    ports: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: apps}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: db-1, namespace: apps, labels: {kubernetes.io/service-name: db}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints: [{addresses: [10.244.1.5, 192.168.5.5]}]
`

// TestTranslateClusterCIDRs checks that --cluster-cidr reaches the translator: without
// it a private Service endpoint is used; with it, one outside the pod range is refused.
func TestTranslateClusterCIDRs(t *testing.T) {
	input := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(input, []byte(serviceBackendYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		flags         []string
		want, notWant string
	}{
		{"no cluster CIDR: private endpoints are allowed", nil, "address: 192.168.5.5", "ForbiddenDestination"},
		{"a node address outside the cluster CIDR is refused", []string{"--cluster-cidr", "10.244.0.0/16"}, "192.168.5.5 (outside the cluster CIDRs: private (192.168.0.0/16))", "address: 192.168.5.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"translate", "-f", input}, tt.flags...), &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d; stderr: %s", code, stderr.String())
			}
			out := strings.Join(strings.Fields(stdout.String()), " ") // undo YAML line folding
			if !strings.Contains(out, tt.want) || strings.Contains(out, tt.notWant) {
				t.Fatalf("want %q and not %q in:\n%s", tt.want, tt.notWant, stdout.String())
			}
		})
	}
}
