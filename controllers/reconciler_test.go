package controllers

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

var api *testenv.APIServer

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithAPIServer(m, func(a *testenv.APIServer) { api = a }))
}

// world is a running manager with the real xDS server, DNS guard and one Envoy.
type world struct {
	t      *testing.T
	c      client.Client
	xds    *xds.Server
	dns    *dnstest.Server
	envoy  *xdstest.Envoy
	port   uint32
	policy egress.AddressPolicy
}

func startWorld(t *testing.T) *world {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// The manager logs while stopping, after the test returned: testr would panic then.
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	log.SetLogger(logger)
	w := &world{t: t, c: api.Client, dns: dnstest.NewServer(t), port: xdstest.FreePort(t)}

	w.xds = xds.New(logger)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.xds.Serve(ctx, lis) }()

	cfg := dnsguard.DefaultConfig()
	cfg.DNSServers, cfg.AllowCIDRs, cfg.IPFamily, cfg.MinTTL = []string{w.dns.Addr()}, []string{"127.0.0.0/8"}, dnsguard.IPv4, time.Second
	policy, err := cfg.AddressPolicy()
	if err != nil {
		t.Fatal(err)
	}
	w.policy = policy
	resolver, err := dnsguard.NewResolver(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := dnsguard.NewStore(resolver, cfg, dnsguard.StoreOptions{})
	go func() { _ = store.Run(ctx) }()

	mgr, err := ctrl.NewManager(api.Config, ctrl.Options{Scheme: api.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	r := NewReconciler(mgr, Options{ControllerName: egress.ControllerName, XDS: w.xds, DNS: store, AddressPolicy: policy})
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	xdsPort := uint32(lis.Addr().(*net.TCPAddr).Port)
	w.envoy = xdstest.Start(t, xdstest.Config{Bootstrap: func(admin uint32) ([]byte, error) {
		return bootstrap.YAML(bootstrap.Options{Gateway: "gw/egress", NodeID: "test", XDSAddress: "127.0.0.1", XDSPort: xdsPort, AdminPort: admin})
	}})
	return w
}

// apply creates every object of a multi-document YAML.
func (w *world) apply(yamlText string) {
	w.t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(yamlText), 4096)
	for {
		var u map[string]any
		if err := dec.Decode(&u); err != nil {
			break
		}
		if len(u) == 0 {
			continue
		}
		obj := &unstructuredObject{}
		obj.SetUnstructuredContent(u)
		if err := w.c.Create(context.Background(), obj); err != nil {
			w.t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// condition waits until the object's condition of the given type has the status and reason.
func (w *world) condition(obj client.Object, conds func() []metav1.Condition, typ, status, reason string) {
	w.t.Helper()
	key := client.ObjectKeyFromObject(obj)
	xdstest.WaitFor(w.t, 20*time.Second, fmt.Sprintf("%T %s %s=%s/%s", obj, key, typ, status, reason), func() error {
		if err := w.c.Get(context.Background(), key, obj); err != nil {
			return err
		}
		for _, c := range conds() {
			if c.Type == typ {
				if string(c.Status) == status && c.Reason == reason {
					return nil
				}
				return fmt.Errorf("now %s/%s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return fmt.Errorf("no %s condition yet", typ)
	})
}

func TestManagerProgramsEnvoyAndWritesStatuses(t *testing.T) {
	w := startWorld(t)
	up := testupstream.Start(t, testupstream.Options{Name: "api"})
	w.dns.Set("api.manager.test", "api.manager.test. 60 IN A 127.0.0.1")
	w.apply(fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: gw}
---
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
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
  listeners: [{name: http, port: %d, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: apps}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: api.manager.test}
    ports: [{name: http, port: %d, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: apps}
spec:
  parentRefs: [{name: egress, namespace: gw}]
  hostnames: [api.manager.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
`, w.port, up.Port()))

	gc := &gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"}}
	w.condition(gc, func() []metav1.Condition { return gc.Status.Conditions }, "Accepted", "True", "Accepted")
	if n := len(gc.Status.SupportedFeatures); n == 0 || gc.Status.SupportedFeatures[0].Name != "BackendTLSPolicy" {
		t.Errorf("GatewayClass supportedFeatures = %v; want the sorted list starting with BackendTLSPolicy", gc.Status.SupportedFeatures)
	}
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: "gw"}}
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, "Programmed", "True", "Programmed")
	b := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "apps"}}
	w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "AddressesResolved", "True", "Resolved")
	w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "Programmed", "True", "Programmed")
	if b.Status.Destination != "api.manager.test" || len(b.Status.Addresses) != 1 || b.Status.Addresses[0].IP != "127.0.0.1" {
		t.Errorf("Backend status %+v; want destination api.manager.test and address 127.0.0.1", b.Status)
	}
	route := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "apps"}}
	w.condition(route, func() []metav1.Condition {
		if len(route.Status.Parents) == 0 {
			return nil
		}
		return route.Status.Parents[0].Conditions
	}, "ResolvedRefs", "True", "ResolvedRefs")

	xdstest.WaitFor(t, 10*time.Second, "a request through Envoy", func() error {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", w.port), nil)
		req.Host = "api.manager.test"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})

	assertResyncWritesNothing(t, w, []client.Object{gc, gw, b, route})
	assertLockdownFollowsTheLabel(t, w)
}

// assertLockdownFollowsTheLabel: a labelled namespace gets the lockdown policy allowing
// the Envoy listener port and DNS only; a deleted policy comes back; removing the label
// removes it.
func assertLockdownFollowsTheLabel(t *testing.T, w *world) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "locked", Labels: map[string]string{LockdownLabel: "true"}}}
	if err := w.c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "locked", Name: LockdownPolicyName}
	waitPolicy := func(want bool) *networkingv1.NetworkPolicy {
		np := &networkingv1.NetworkPolicy{}
		xdstest.WaitFor(t, 10*time.Second, fmt.Sprintf("lockdown policy present=%v", want), func() error {
			err := w.c.Get(ctx, key, np)
			switch {
			case want && err != nil:
				return err
			case !want && err == nil:
				return fmt.Errorf("still there")
			}
			return nil
		})
		return np
	}
	np := waitPolicy(true)
	if len(np.Spec.Egress) != 2 || np.Spec.Egress[0].Ports[0].Port.IntValue() != int(w.port) || np.Spec.Egress[1].Ports[0].Port.IntValue() != 53 {
		t.Fatalf("lockdown egress rules = %+v; want the Envoy listener port %d, then DNS", np.Spec.Egress, w.port)
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeEgress {
		t.Fatalf("policy types %v; want Egress only", np.Spec.PolicyTypes)
	}
	if err := w.c.Delete(ctx, np); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	waitPolicy(true)
	if err := w.c.Get(ctx, types.NamespacedName{Name: "locked"}, ns); err != nil {
		t.Fatal(err)
	}
	delete(ns.Labels, LockdownLabel)
	if err := w.c.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	waitPolicy(false)
}

// assertResyncWritesNothing triggers a full reconcile and checks no status was rewritten.
func assertResyncWritesNothing(t *testing.T, w *world, objs []client.Object) {
	t.Helper()
	before := make([]string, len(objs)) // by position: a Backend and a route may share a name
	for i, o := range objs {
		if err := w.c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		before[i] = o.GetResourceVersion()
	}
	ns := &corev1.Namespace{}
	if err := w.c.Get(context.Background(), types.NamespacedName{Name: "apps"}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{"resync": "1"}
	if err := w.c.Update(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	for i, o := range objs {
		if err := w.c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		if o.GetResourceVersion() != before[i] {
			t.Errorf("%T %s was rewritten by a resync that changed nothing (resourceVersion %s -> %s)", o, client.ObjectKeyFromObject(o), before[i], o.GetResourceVersion())
		}
	}
}

// unstructuredObject lets apply create objects of any kind from YAML.
type unstructuredObject = unstructured.Unstructured
