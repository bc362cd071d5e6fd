package controllers

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// TestStatusWriteYieldsAndTheNextWritesTheRest: a write told to yield stops handing out
// objects and says so; the next write stores the objects left, and none is written
// twice.
func TestStatusWriteYieldsAndTheNextWritesTheRest(t *testing.T) {
	ctx := context.Background()
	ns := "status-yield"
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	const n = 12
	st := translate.Statuses{Backends: map[string]*egressv1alpha1.BackendStatus{}}
	for i := range n {
		name := fmt.Sprintf("b%d", i)
		createHTTPSBackend(t, ns, name)
		st.Backends[ns+"/"+name] = &egressv1alpha1.BackendStatus{
			Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "ok", ObservedGeneration: 1}}}
	}
	gathered := func() *egress.Resources {
		var list egressv1alpha1.BackendList
		if err := api.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return &egress.Resources{Backends: egress.PointersTo(list.Items)}
	}
	c := &countingClient{Client: api.Client}
	w := &statusWriter{c: c, controller: "portcullis.io/gateway-controller", now: time.Now}
	asked := 0
	yielded, err := w.write(ctx, st, gathered(), func() bool { asked++; return asked > 3 })
	if err != nil {
		t.Fatal(err)
	}
	if first := c.updates.Load(); !yielded || first != 3 {
		t.Fatalf("the write told to yield after 3 objects: yielded %v, %d written; want true, 3", yielded, first)
	}
	yielded, err = w.write(ctx, st, gathered(), func() bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if total := c.updates.Load(); yielded || total != n {
		t.Fatalf("after the next write: yielded %v, %d written in all; want false, %d (each once)", yielded, total, n)
	}
	for _, be := range gathered().Backends {
		if len(be.Status.Conditions) != 1 || be.Status.Conditions[0].Message != "ok" {
			t.Fatalf("Backend %s has status %+v", be.Name, be.Status)
		}
	}
}

// TestYieldAfterWaitsForAWakeUpAndItsShare: the question a status write asks says yes
// only once the reconciler was woken since the reconcile began and the write has run
// its share.
func TestYieldAfterWaitsForAWakeUpAndItsShare(t *testing.T) {
	r := &Reconciler{}
	early := r.yieldAfter(r.wakeups.Load())
	r.wakeups.Add(1)
	late := r.yieldAfter(r.wakeups.Load()) // its reconcile began after the wake-up
	if early() {
		t.Fatal("yielded before the write had its share")
	}
	time.Sleep(statusWriteShare)
	if late() {
		t.Fatal("yielded to a wake-up from before its reconcile")
	}
	if !early() {
		t.Fatal("did not yield after a wake-up and the write's share")
	}
	r.wakeups.Add(1)
	if !late() {
		t.Fatal("did not yield to a wake-up during the write")
	}
}

// TestStatusWriteThatYieldsStoresBackendsAndRoutesInTurns: a write cut short has stored
// Backends and routes alike, one of each in turn, and no Backend waiting for Envoy
// (Programmed Pending) before the others; it counts what it left for the next write. Backends used to come after every route: in
// a burst of creates every write yielded among the routes, and no Backend showed
// Programmed until the burst was over.
func TestStatusWriteThatYieldsStoresBackendsAndRoutesInTurns(t *testing.T) {
	ctx := context.Background()
	ns := "status-turns"
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	const each = 4
	st := translate.Statuses{Backends: map[string]*egressv1alpha1.BackendStatus{}, HTTPRoutes: map[string][]gwapiv1.RouteParentStatus{}}
	for i := range each {
		for _, programmed := range []string{egressv1alpha1.ReasonProgrammed, egressv1alpha1.ReasonPending} {
			name := fmt.Sprintf("%s-%d", strings.ToLower(programmed), i)
			createHTTPSBackend(t, ns, name)
			st.Backends[ns+"/"+name] = &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{
				{Type: egressv1alpha1.ConditionAccepted, Status: "True", Reason: "Accepted", Message: "ok", ObservedGeneration: 1},
				{Type: egressv1alpha1.ConditionProgrammed, Status: boolStatus(programmed == egressv1alpha1.ReasonProgrammed), Reason: programmed, Message: "ok", ObservedGeneration: 1},
			}}
		}
		name := fmt.Sprintf("route-%d", i)
		createTurnRoute(t, ns, name)
		st.HTTPRoutes[ns+"/"+name] = []gwapiv1.RouteParentStatus{{ParentRef: gwapiv1.ParentReference{Name: "gw"}, ControllerName: "portcullis.io/gateway-controller",
			Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "ok", ObservedGeneration: 1}}}}
	}
	w := &statusWriter{c: api.Client, controller: "portcullis.io/gateway-controller", now: time.Now}
	asked := 0
	if yielded, err := w.write(ctx, st, &egress.Resources{}, func() bool { asked++; return asked > each }); err != nil || !yielded {
		t.Fatalf("the write told to yield after %d objects: yielded %v, %v", each, yielded, err)
	}
	if got, want := writtenTurns(t, ns), map[string]int{"programmed": each / 2, "pending": 0, "route": each / 2}; !maps.Equal(got, want) {
		t.Fatalf("the write cut short after %d objects stored %v; want %v", each, got, want)
	}
	if got, want := w.deferred.Load(), int64(3*each-each); got != want {
		t.Errorf("the write cut short says %d objects deferred; want %d", got, want)
	}
	if yielded, err := w.write(ctx, st, &egress.Resources{}, func() bool { return false }); err != nil || yielded {
		t.Fatalf("the next write: yielded %v, %v", yielded, err)
	}
	if got, want := writtenTurns(t, ns), map[string]int{"programmed": each, "pending": each, "route": each}; !maps.Equal(got, want) {
		t.Fatalf("after the next write %v are stored; want %v", got, want)
	}
	if got := w.deferred.Load(); got != 0 {
		t.Errorf("the write that stored everything says %d objects deferred; want 0", got)
	}
}

// createHTTPSBackend creates a Backend for name.example.com:443.
func createHTTPSBackend(t *testing.T, ns, name string) {
	t.Helper()
	be := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: egressv1alpha1.BackendSpec{
		Destination: egressv1alpha1.BackendDestination{Type: egressv1alpha1.DestinationTypeFQDN, FQDN: &egressv1alpha1.FQDNDestination{Hostname: name + ".example.com"},
			Ports: []egressv1alpha1.BackendPort{{Name: "https", Port: 443, Protocol: egressv1alpha1.PortProtocolHTTPS}}}}}
	if err := api.Client.Create(context.Background(), be); err != nil {
		t.Fatal(err)
	}
}

// createTurnRoute creates an HTTPRoute attached to the Gateway gw.
func createTurnRoute(t *testing.T, ns, name string) {
	t.Helper()
	rt := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gwapiv1.HTTPRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "gw"}}}}}
	if err := api.Client.Create(context.Background(), rt); err != nil {
		t.Fatal(err)
	}
}

// writtenTurns counts the objects of ns with a stored status, by the first part of
// their names.
func writtenTurns(t *testing.T, ns string) map[string]int {
	t.Helper()
	out := map[string]int{"programmed": 0, "pending": 0, "route": 0}
	var backends egressv1alpha1.BackendList
	var routes gwapiv1.HTTPRouteList
	if err := api.Client.List(context.Background(), &backends, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := api.Client.List(context.Background(), &routes, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, be := range backends.Items {
		if len(be.Status.Conditions) > 0 {
			out[strings.SplitN(be.Name, "-", 2)[0]]++
		}
	}
	for _, rt := range routes.Items {
		if len(rt.Status.Parents) > 0 {
			out["route"]++
		}
	}
	return out
}
