package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestProgrammedFollowsWhatEnvoyRuns: Programmed says whether Envoy runs an object's
// current generation. While Envoy cannot acknowledge (paused), an edited Backend is
// Pending, an untouched Backend and the Gateway stay Programmed (their statuses are not
// rewritten), and once Envoy resumes the edited Backend is Programmed again.
func TestProgrammedFollowsWhatEnvoyRuns(t *testing.T) {
	w := newWorld(t)
	const ns = "programmed"
	gwPort := xdstest.FreePort(t)
	w.apply(egressGatewayYAML(ns, gwPort, "Same") + twoBackendsYAML(ns))
	envoy := w.startEnvoy(ns + "/egress")
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: ns}}
	edited := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "edited", Namespace: ns}}
	untouched := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "untouched", Namespace: ns}}
	gwConds := func() []metav1.Condition { return gw.Status.Conditions }
	w.condition(gw, gwConds, "Programmed", "True", "Programmed")
	w.condition(edited, func() []metav1.Condition { return edited.Status.Conditions }, "Programmed", "True", "Programmed")
	w.condition(untouched, func() []metav1.Condition { return untouched.Status.Conditions }, "Programmed", "True", "Programmed")
	before := resourceVersions(t, w.c, []client.Object{gw, untouched})

	resume := pause(t, envoy)
	edited.Spec.Destination.Ports[0].Port = 9090
	if err := w.c.Update(context.Background(), edited); err != nil {
		t.Fatal(err)
	}
	w.condition(edited, func() []metav1.Condition { return edited.Status.Conditions }, "Programmed", "False", "Pending")
	if c := findCond(edited.Status.Conditions, "Programmed"); c.ObservedGeneration != edited.Generation {
		t.Errorf("Pending condition observedGeneration %d; want %d", c.ObservedGeneration, edited.Generation)
	}
	time.Sleep(time.Second)
	if after := resourceVersions(t, w.c, []client.Object{gw, untouched}); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the Gateway's and the untouched Backend's statuses were rewritten while Envoy was updating (%v -> %v)", before, after)
	}
	w.condition(gw, gwConds, "Programmed", "True", "Programmed")

	resume()
	w.condition(edited, func() []metav1.Condition { return edited.Status.Conditions }, "Programmed", "True", "Programmed")
}

// twoBackendsYAML is the Backends "edited" and "untouched" in ns and a route of the
// Gateway "egress" to each.
func twoBackendsYAML(ns string) string {
	return fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: edited, namespace: %[1]s}
spec:
  destination:
    type: IP
    ip: {address: 127.0.0.1}
    ports: [{name: http, port: 9080, protocol: HTTP}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: untouched, namespace: %[1]s}
spec:
  destination:
    type: IP
    ip: {address: 127.0.0.1}
    ports: [{name: http, port: 9081, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: %[1]s}
spec:
  parentRefs: [{name: egress}]
  rules:
  - backendRefs: [{group: egress.portcullis.io, kind: Backend, name: edited}]
  - matches: [{path: {type: PathPrefix, value: /other}}]
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: untouched}]
`, ns)
}

// TestProgrammedOutlastsAnEnvoyFarBehind: an Envoy more versions behind than the
// reconciler remembers (maxVersions) runs a version it cannot look into; the Gateway
// and a Backend it ran at their current generations stay Programmed (every version
// published since carries them, and Envoy only moves forward), rather than all of them
// flipping to Pending and back: at 10,000 Backends under a burst that could be 20,000 status
// writes, and `kubectl wait` saw Programmed go away.
func TestProgrammedOutlastsAnEnvoyFarBehind(t *testing.T) {
	w := newWorld(t)
	const ns = "programmed-far-behind"
	w.apply(egressGatewayYAML(ns, xdstest.FreePort(t), "Same") + twoBackendsYAML(ns))
	envoy := w.startEnvoy(ns + "/egress")
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: ns}}
	edited := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "edited", Namespace: ns}}
	untouched := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "untouched", Namespace: ns}}
	editedConds := func() []metav1.Condition { return edited.Status.Conditions }
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, "Programmed", "True", "Programmed")
	w.condition(edited, editedConds, "Programmed", "True", "Programmed")
	w.condition(untouched, func() []metav1.Condition { return untouched.Status.Conditions }, "Programmed", "True", "Programmed")
	before := resourceVersions(t, w.c, []client.Object{gw, untouched})

	resume := pause(t, envoy)
	for i := range maxVersions + 8 { // each edit is published as a version of its own
		edited.Spec.Destination.Ports[0].Port = int32(10000 + i)
		if err := w.c.Update(context.Background(), edited); err != nil {
			t.Fatal(err)
		}
		generation := edited.Generation
		xdstest.WaitFor(t, 20*time.Second, "the edit to be translated", func() error {
			if err := w.c.Get(context.Background(), client.ObjectKeyFromObject(edited), edited); err != nil {
				return err
			}
			if c := findCond(edited.Status.Conditions, "Programmed"); c == nil || c.ObservedGeneration != generation {
				return fmt.Errorf("Programmed is not of generation %d yet", generation)
			}
			return nil
		})
	}
	if after := resourceVersions(t, w.c, []client.Object{gw, untouched}); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the Gateway's and the untouched Backend's statuses were rewritten while Envoy was %d versions behind (%v -> %v): %s",
			maxVersions+8, before, after, programmedMessages(gw, untouched))
	}
	resume()
	w.condition(edited, editedConds, "Programmed", "True", "Programmed")
}

// programmedMessages are the objects' Programmed conditions, for a failure message.
func programmedMessages(gw *gwapiv1.Gateway, b *egressv1alpha1.Backend) string {
	var out []string
	for _, c := range []*metav1.Condition{findCond(gw.Status.Conditions, "Programmed"), findCond(b.Status.Conditions, "Programmed")} {
		if c != nil {
			out = append(out, fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message))
		}
	}
	return strings.Join(out, "; ")
}

// TestRouteMovesMakeBeforeBreak: a route moved from Backend a to b is published in
// steps. While Envoy is paused only the first step can be out: b's cluster added next
// to a's, the routes unchanged. Once Envoy resumes, the route moves and a's cluster
// goes, and the Backend b is Programmed only then.
func TestRouteMovesMakeBeforeBreak(t *testing.T) {
	w := newWorld(t)
	const ns = "staging"
	gwPort := xdstest.FreePort(t)
	w.apply(egressGatewayYAML(ns, gwPort, "Same") + fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: a, namespace: %[1]s}
spec:
  destination: {type: IP, ip: {address: 127.0.0.1}, ports: [{name: http, port: 9080, protocol: HTTP}]}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: %[1]s}
spec:
  destination: {type: IP, ip: {address: 127.0.0.1}, ports: [{name: http, port: 9081, protocol: HTTP}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: %[1]s}
spec:
  parentRefs: [{name: egress}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: a}]}]
`, ns))
	envoy := w.startEnvoy(ns + "/egress")
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: ns}}
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, "Programmed", "True", "Programmed")
	clusters := func() int { return w.xds.Status(ns + "/egress").Resources[resource.ClusterType] }
	if n := clusters(); n != 1 {
		t.Fatalf("%d clusters published; want a's only", n)
	}
	before := w.xds.Status(ns + "/egress").Version

	resume := pause(t, envoy)
	route := &gwapiv1.HTTPRoute{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "r"}, route); err != nil {
		t.Fatal(err)
	}
	route.Spec.Rules[0].BackendRefs[0].Name = "b"
	if err := w.c.Update(context.Background(), route); err != nil {
		t.Fatal(err)
	}
	xdstest.WaitFor(t, 10*time.Second, "the first step (b's cluster added) published", func() error {
		if v := w.xds.Status(ns + "/egress").Version; v == before || clusters() != 2 {
			return fmt.Errorf("version %s, %d clusters", v, clusters())
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	if n := clusters(); n != 2 {
		t.Fatalf("while Envoy runs the old routes %d clusters are published; want a's and b's", n)
	}
	b := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns}}
	w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "Programmed", "False", "Pending")

	resume()
	w.condition(b, func() []metav1.Condition { return b.Status.Conditions }, "Programmed", "True", "Programmed")
	xdstest.WaitFor(t, 10*time.Second, "a's cluster dropped from Envoy", func() error {
		body, err := adminGet(envoy, "/clusters")
		if err != nil {
			return err
		}
		if clusters() != 1 || strings.Contains(body, "backend/"+ns+"/a/") || !strings.Contains(body, "backend/"+ns+"/b/") {
			return fmt.Errorf("%d clusters published; Envoy has a: %v, b: %v", clusters(),
				strings.Contains(body, "backend/"+ns+"/a/"), strings.Contains(body, "backend/"+ns+"/b/"))
		}
		return nil
	})
}
