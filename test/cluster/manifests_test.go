//go:build cluster

package cluster

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/internal/testpki"
)

// The test's objects. The names an outside resolver must answer, and the address the
// test serves the outside API on, are the single-node cluster's (hack/cluster/dns-records
// and hack/cluster/lib.sh).
const (
	gatewayClass = "portcullis-e2e"
	gatewayNS    = "pc-e2e-gateway" // the shared Gateway
	appsNS       = "pc-e2e-apps"    // routes, Backends, a client pod; locked down
	otherNS      = "pc-e2e-other"   // a client pod of another tenant
	gatewayName  = "shared"

	echoHost     = "echo.pc-e2e.example"      // HTTPRoute -> Service Backend -> echo-basic
	partnerHost  = "api.partner.example"      // FQDN Backend, HTTPS with a private CA and a client certificate
	metadataHost = "metadata.partner.example" // resolves to 169.254.169.254
	externalIP   = "11.22.33.44"              // api.partner.example, an address on the node's lo
	clientCN     = "pc-e2e-client"            // the client certificate the gateway presents
)

var testNamespaces = []string{gatewayNS, appsNS, otherNS}

// removeLeftovers deletes what an earlier run left and waits until it is gone.
func (k *cluster) removeLeftovers() {
	k.t.Helper()
	args := append([]string{"delete", "namespace", "--ignore-not-found", "--wait=false"}, testNamespaces...)
	if _, err := k.kubectl(args...); err != nil {
		k.t.Fatal(err)
	}
	if _, err := k.kubectl("delete", "gatewayclass", gatewayClass, "--ignore-not-found"); err != nil {
		k.t.Fatal(err)
	}
	eventually(k.t, 3*time.Minute, "namespaces of an earlier run deleted", func() error {
		for _, ns := range testNamespaces {
			err := k.c.Get(k.t.Context(), keyOf("", ns), &corev1.Namespace{})
			if err == nil {
				return fmt.Errorf("namespace %s still exists", ns)
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
}

// cleanup deletes the test's objects unless PORTCULLIS_CLUSTER_KEEP is set.
func (k *cluster) cleanup(keep bool) {
	if keep {
		k.t.Logf("PORTCULLIS_CLUSTER_KEEP is set: namespaces %s and GatewayClass %s are left in place", strings.Join(testNamespaces, ", "), gatewayClass)
		return
	}
	args := append([]string{"delete", "namespace", "--ignore-not-found", "--wait=false"}, testNamespaces...)
	if _, err := k.kubectl(args...); err != nil {
		k.t.Log(err)
	}
	if _, err := k.kubectl("delete", "gatewayclass", gatewayClass, "--ignore-not-found", "--wait=false"); err != nil {
		k.t.Log(err)
	}
}

// tlsObjects creates the CA ConfigMap and the client certificate Secret the FQDN
// Backend references.
func (k *cluster) tlsObjects(ca *testpki.CA, clientCert testpki.Pair) {
	k.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "partner-ca", Namespace: appsNS},
		Data: map[string]string{"ca.crt": string(ca.CertPEM)}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "partner-client", Namespace: appsNS},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: clientCert.CertPEM, corev1.TLSPrivateKeyKey: clientCert.KeyPEM}}
	if err := k.c.Create(k.t.Context(), cm); err != nil {
		k.t.Fatal(err)
	}
	if err := k.c.Create(k.t.Context(), secret); err != nil {
		k.t.Fatal(err)
	}
}

// namespacesYAML: the Gateway's namespace, the application namespace (locked down: its
// pods may only reach the gateway and DNS) and another tenant's.
const namespacesYAML = `
apiVersion: v1
kind: Namespace
metadata: {name: ` + gatewayNS + `}
---
apiVersion: v1
kind: Namespace
metadata:
  name: ` + appsNS + `
  labels: {egress.portcullis.io/lockdown: "true"}
---
apiVersion: v1
kind: Namespace
metadata: {name: ` + otherNS + `}
`

// gatewayYAML: a class of our controller and a Gateway shared by every namespace, with
// tenant isolation on (the default).
const gatewayYAML = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ` + gatewayClass + `}
spec: {controllerName: portcullis.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ` + gatewayName + `, namespace: ` + gatewayNS + `}
spec:
  gatewayClassName: ` + gatewayClass + `
  listeners:
  - name: http
    protocol: HTTP
    port: 80
    allowedRoutes: {namespaces: {from: All}}
`

// workloadsYAML: echo-basic behind a Service whose port (80) is not the pod's (3000),
// and a client pod in each tenant namespace. The images are in the node's containerd
// already (make cluster-up); nothing is pulled.
var workloadsYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo, namespace: ` + appsNS + `}
spec:
  replicas: 1
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      containers:
      - name: echo
        image: registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.3
        imagePullPolicy: Never
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        ports: [{containerPort: 3000}]
        readinessProbe: {httpGet: {path: /, port: 3000}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: ` + appsNS + `}
spec:
  selector: {app: echo}
  ports: [{name: http, port: 80, targetPort: 3000}]
` + probePodYAML(appsNS) + probePodYAML(otherNS)

func probePodYAML(namespace string) string {
	return `---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: ` + namespace + `, labels: {app: client}}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsNonRoot: true, runAsUser: 65532}
  containers:
  - name: probe
    image: localhost/portcullis-probe:dev
    imagePullPolicy: Never
    ports: [{containerPort: 8080}]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
`
}

// routesYAML: in the application namespace, a Backend and an HTTPRoute per destination.
var routesYAML = `
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: echo, namespace: ` + appsNS + `}
spec:
  destination:
    type: Service
    kubernetesService: {name: echo}
    ports: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: partner-api, namespace: ` + appsNS + `}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: ` + partnerHost + `
      tls:
        caCertificates: [{secretRef: {kind: ConfigMap, name: partner-ca}, key: ca.crt}]
        clientCertificate: {secretRef: {name: partner-client}}
    ports: [{name: https, port: 443, protocol: HTTPS}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: metadata, namespace: ` + appsNS + `}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: ` + metadataHost + `}
    ports: [{name: http, port: 80, protocol: HTTP}]
` + routeYAML("echo", echoHost) + routeYAML("partner-api", partnerHost) + routeYAML("metadata", metadataHost)

func routeYAML(backend, host string) string {
	return `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ` + backend + `, namespace: ` + appsNS + `}
spec:
  parentRefs: [{name: ` + gatewayName + `, namespace: ` + gatewayNS + `}]
  hostnames: [` + host + `]
  rules:
  - backendRefs: [{group: egress.portcullis.io, kind: Backend, name: ` + backend + `}]
`
}

// gatewayAddress returns the address in the Gateway's status.
func gatewayAddress(gw *gwapiv1.Gateway) string {
	if len(gw.Status.Addresses) == 0 {
		return ""
	}
	return gw.Status.Addresses[0].Value
}
