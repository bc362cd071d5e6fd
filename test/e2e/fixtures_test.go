package e2e

// gatewayYAML is the GatewayClass and Gateway every scenario starts from: one HTTP
// listener on the test's free port, open to routes from every namespace.
const gatewayYAML = `
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
  listeners: [{name: http, port: {{.Port}}, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
`

// routeYAML sends every request for a host to one Backend.
const routeYAML = `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: {{.Name}}, namespace: apps}
spec:
  parentRefs: [{name: egress, namespace: gw}]
  hostnames: [{{.Host}}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: {{.Name}}}]}]
`

// caConfigMapYAML holds the upstream CA for Backends to trust.
const caConfigMapYAML = `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: upstream-ca, namespace: apps}
data: {ca.crt: {{quote .CA}}}
`

// clientSecretYAML holds the gateway's client certificate for an upstream.
const clientSecretYAML = `
---
apiVersion: v1
kind: Secret
metadata: {name: client-cert, namespace: apps}
type: kubernetes.io/tls
data: {tls.crt: {{b64 .ClientCert}}, tls.key: {{b64 .ClientKey}}}
`
