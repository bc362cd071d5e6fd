package controllers

import "fmt"

// gatewayObjects is a namespace holding a Gateway "egress" of the portcullis class with
// one HTTP listener on port, and the class itself; from names the namespaces whose
// routes the listener admits (Same or All).
func gatewayObjects(ns string, port uint32, from string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: %[1]s}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: %[2]d, protocol: HTTP, allowedRoutes: {namespaces: {from: %[3]s}}}]
`, ns, port, from)
}
