package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// cleanupController is the controllerName of this test's manager, so that it serves only
// its own GatewayClass and provisions nothing for the other tests' Gateways.
const cleanupController = "portcullis.io/cleanup-test-controller"

// TestGatewayDeletionCleansUp runs the manager with the Kubernetes provider: a Gateway
// gets its ServiceAccount, ConfigMap, Deployment and Service and the Service's address in
// status; a Gateway whose objects cannot be made says why in Programmed; deleting the
// Gateway deletes its objects (envtest has no garbage collector: the provider's Delete
// must do it) and withdraws its xDS snapshot.
func TestGatewayDeletionCleansUp(t *testing.T) {
	provider, err := infra.NewKubernetes(api.Client, infra.KubernetesOptions{XDSAddress: "portcullis-xds.portcullis-system.svc", XDSPort: 18000})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, func(o *Options) { o.ControllerName, o.Provider = cleanupController, provider })
	const ns = "cleanup"
	w.namespace(ns)
	// An object of a Gateway's name that Portcullis did not make blocks that Gateway.
	w.apply(fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: %s, namespace: %s}
data: {owner: someone else}
`, infra.ResourceName("blocked"), ns))
	w.apply(fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: cleanup}
spec: {controllerName: %[1]s}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: %[2]s}
spec:
  gatewayClassName: cleanup
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: blocked, namespace: %[2]s}
spec:
  gatewayClassName: cleanup
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: %[2]s}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: svc, port: 80}]}]
`, cleanupController, ns))

	waitWants(t, w, []want{
		on("Gateway", ns, "gw").is("Accepted=True/Accepted"),
		on("Gateway", ns, "gw").is("Programmed=False/Pending"),
		on("Gateway", ns, "gw").where("status.addresses is the Service's cluster IP", addressIsServiceIP(w.c, ns, "gw")),
		on("Gateway", ns, "blocked").is("Programmed=False/Invalid").with("the Envoy fleet could not be provisioned", "not made by Portcullis"),
		on("HTTPRoute", ns, "r").at("gw").is("Accepted=True/Accepted"),
	}, 20*time.Second)
	objs := fleetObjects(ns, "gw")
	for _, o := range objs {
		if err := w.c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatalf("%T of the Gateway: %v", o, err)
		}
	}
	if v := w.xds.Status(ns + "/gw").Version; v == "" {
		t.Fatalf("no xDS snapshot published for %s/gw", ns)
	}

	if err := w.c.Delete(context.Background(), &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"}}); err != nil {
		t.Fatal(err)
	}
	xdstest.WaitFor(t, 20*time.Second, "the Gateway's objects and snapshot to be gone", func() error {
		for _, o := range objs {
			err := w.c.Get(context.Background(), client.ObjectKeyFromObject(o), o)
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s: still there (%v)", o, client.ObjectKeyFromObject(o), err)
			}
		}
		if st := w.xds.Status(ns + "/gw"); st.Version != "" {
			return fmt.Errorf("snapshot version %s still published", st.Version)
		}
		return nil
	})
	foreign := &corev1.ConfigMap{}
	if err := w.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: infra.ResourceName("blocked")}, foreign); err != nil || foreign.Data["owner"] != "someone else" {
		t.Errorf("the ConfigMap Portcullis did not make was touched: %v %v", err, foreign.Data)
	}
	t.Run("the route's parent entry for the deleted Gateway goes", func(t *testing.T) {
		waitWants(t, w.in(t), []want{on("HTTPRoute", ns, "r").at("gw").is("none")}, 20*time.Second)
	})
}

// fleetObjects are the objects the Kubernetes provider makes for a Gateway.
func fleetObjects(ns, gateway string) []client.Object {
	meta := metav1.ObjectMeta{Namespace: ns, Name: infra.ResourceName(gateway)}
	return []client.Object{&corev1.ServiceAccount{ObjectMeta: meta}, &corev1.ConfigMap{ObjectMeta: meta},
		&appsv1.Deployment{ObjectMeta: meta}, &corev1.Service{ObjectMeta: meta}}
}

// addressIsServiceIP checks that the Gateway's status.addresses is exactly its
// Service's cluster IP.
func addressIsServiceIP(c client.Client, ns, gateway string) func(client.Object) error {
	return func(o client.Object) error {
		svc := &corev1.Service{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: infra.ResourceName(gateway)}, svc); err != nil {
			return err
		}
		addrs := o.(*gwapiv1.Gateway).Status.Addresses
		if svc.Spec.ClusterIP == "" || len(addrs) != 1 || addrs[0].Value != svc.Spec.ClusterIP ||
			addrs[0].Type == nil || *addrs[0].Type != gwapiv1.IPAddressType {
			return fmt.Errorf("addresses %+v, Service cluster IP %q", addrs, svc.Spec.ClusterIP)
		}
		return nil
	}
}
