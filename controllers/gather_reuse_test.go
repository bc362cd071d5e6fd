package controllers

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// TestGatherListsAgainOnlyTheKindsThatChanged runs the gatherer on a real informer cache
// whose Backend and HTTPRoute events go through the counting predicate, as the
// reconciler's watches do: with no event in between, two gathers hand out the same
// lists; a Backend's edit makes the next gather list the Backends again (and see the
// edit) while the HTTPRoutes stay the list already handed out; and a status-only write,
// which the reconciler's own predicates filter, still makes the kind be listed again,
// so the status writer compares against the stored status.
func TestGatherListsAgainOnlyTheKindsThatChanged(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "gather-kinds"
	be, rt := gatherKindsObjects(ns)
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, be, rt} {
		if err := api.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	g, _ := countedGatherer(ctx, t, cache.Options{Scheme: api.Scheme})

	first := gatherUntil(t, g, func(res *egress.Resources) bool {
		return gatheredBackend(res, ns, "api") != nil && gatheredRoute(res, ns, "api") != nil
	})
	second := gatherOnce(t, g)
	if &first.Backends[0] != &second.Backends[0] || &first.HTTPRoutes[0] != &second.HTTPRoutes[0] {
		t.Fatal("two gathers with no event in between listed again; want the same lists handed out")
	}

	be.Spec.Destination.FQDN.Hostname = "edited.example.com"
	if err := api.Client.Update(ctx, be); err != nil {
		t.Fatal(err)
	}
	third := gatherUntil(t, g, func(res *egress.Resources) bool {
		b := gatheredBackend(res, ns, "api")
		return b != nil && b.Spec.Destination.FQDN.Hostname == "edited.example.com"
	})
	if &third.HTTPRoutes[0] != &second.HTTPRoutes[0] {
		t.Fatal("a Backend's edit made the gather list the HTTPRoutes again; want the same list handed out")
	}

	rt.Status.Parents = []gwapiv1.RouteParentStatus{{ParentRef: gwapiv1.ParentReference{Name: "egress"}, ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}}}}
	if err := api.Client.Status().Update(ctx, rt); err != nil {
		t.Fatal(err)
	}
	gatherUntil(t, g, func(res *egress.Resources) bool {
		r := gatheredRoute(res, ns, "api")
		return r != nil && len(r.Status.Parents) == 1
	})
}

// countedGatherer is a gatherer on a real informer cache (started, synced) whose
// Backend and HTTPRoute events go through the counting predicate, as the reconciler's
// watches do.
func countedGatherer(ctx context.Context, t *testing.T, opts cache.Options) (*gatherer, cache.Cache) {
	t.Helper()
	c, err := cache.New(api.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	events := &listEvents{}
	countEvents(ctx, t, c, events, listBackends, &egressv1alpha1.Backend{})
	countEvents(ctx, t, c, events, listHTTPRoutes, &gwapiv1.HTTPRoute{})
	go func() { _ = c.Start(ctx) }()
	c.WaitForCacheSync(ctx)
	g := newGatherer(c, api.Client)
	g.events = events
	return g, c
}

// countEvents counts obj's informer events as kind k, through the counting predicate.
func countEvents(ctx context.Context, t *testing.T, c cache.Cache, events *listEvents, k listKind, obj client.Object) {
	t.Helper()
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		t.Fatal(err)
	}
	p := events.counter(k)
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { p.Create(event.CreateEvent{Object: o.(client.Object)}) },
		UpdateFunc: func(o, n any) {
			p.Update(event.UpdateEvent{ObjectOld: o.(client.Object), ObjectNew: n.(client.Object)})
		},
		DeleteFunc: func(o any) {
			if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = tomb.Obj
			}
			obj, _ := o.(client.Object)
			p.Delete(event.DeleteEvent{Object: obj})
		},
	}); err != nil {
		t.Fatal(err)
	}
}

// gatherUntil gathers until ok holds of the result, for up to ten seconds.
func gatherUntil(t *testing.T, g *gatherer, ok func(*egress.Resources) bool) *egress.Resources {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := gatherOnce(t, g)
		if ok(res) {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatal("the gather did not show the change within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func gatherOnce(t *testing.T, g *gatherer) *egress.Resources {
	t.Helper()
	res, err := g.gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func gatherKindsObjects(ns string) (*egressv1alpha1.Backend, *gwapiv1.HTTPRoute) {
	be := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}, Spec: egressv1alpha1.BackendSpec{
		Destination: egressv1alpha1.BackendDestination{Type: egressv1alpha1.DestinationTypeFQDN,
			FQDN:  &egressv1alpha1.FQDNDestination{Hostname: "api.example.com"},
			Ports: []egressv1alpha1.BackendPort{{Name: "https", Port: 443, Protocol: egressv1alpha1.PortProtocolHTTPS}}}}}
	rt := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}, Spec: gwapiv1.HTTPRouteSpec{
		CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "egress"}}},
		Rules: []gwapiv1.HTTPRouteRule{{BackendRefs: []gwapiv1.HTTPBackendRef{{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{
			Group: ptr.To(gwapiv1.Group(egressv1alpha1.GroupVersion.Group)), Kind: ptr.To(gwapiv1.Kind("Backend")), Name: "api"}}}}}}}}
	return be, rt
}

func gatheredBackend(res *egress.Resources, ns, name string) *egressv1alpha1.Backend {
	for i := range res.Backends {
		if b := res.Backends[i]; b.Namespace == ns && b.Name == name {
			return b
		}
	}
	return nil
}

func gatheredRoute(res *egress.Resources, ns, name string) *gwapiv1.HTTPRoute {
	for i := range res.HTTPRoutes {
		if r := res.HTTPRoutes[i]; r.Namespace == ns && r.Name == name {
			return r
		}
	}
	return nil
}

// TestGatherPatchesTheNamedObjects runs the gatherer on a real informer cache: after a
// Backend is edited, another deleted and a third created, the gather patches its last
// list with the three (the list carries an index only a patch builds) and the result
// holds exactly the objects a fresh list of the cache holds, at their resourceVersions;
// the HTTPRoutes, with no event, are the list handed out before; and an event counted
// whose name was already taken changes nothing. An HTTPRoute's edit then patches the
// routes, every other route the very object handed out before.
func TestGatherPatchesTheNamedObjects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "gather-patch"
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	var backends []*egressv1alpha1.Backend
	for i := range 4 {
		be, rt := gatherKindsObjects(ns)
		be.Name, rt.Name = fmt.Sprintf("api-%d", i), fmt.Sprintf("api-%d", i)
		for _, o := range []client.Object{be, rt} {
			if err := api.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		backends = append(backends, be)
	}
	g, c := countedGatherer(ctx, t, cache.Options{Scheme: api.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	first := gatherUntil(t, g, func(res *egress.Resources) bool { return len(res.Backends) == 4 && len(res.HTTPRoutes) == 4 })

	backends[0].Spec.Destination.FQDN.Hostname = "edited.example.com"
	if err := api.Client.Update(ctx, backends[0]); err != nil {
		t.Fatal(err)
	}
	if err := api.Client.Delete(ctx, backends[1]); err != nil {
		t.Fatal(err)
	}
	created, _ := gatherKindsObjects(ns)
	created.Name = "api-new"
	if err := api.Client.Create(ctx, created); err != nil {
		t.Fatal(err)
	}
	// The cache must show all three changes before the gather is compared with it:
	// a cache still behind them lists what the first gather handed out, and the
	// comparison would pass before anything was patched.
	last := gatherUntil(t, g, func(res *egress.Resources) bool {
		listed := listedBackends(t, c, ns)
		_, deletedSeen := listed["api-1"]
		_, createdSeen := listed["api-new"]
		allSeen := !deletedSeen && createdSeen && listed["api-0"] == backends[0].ResourceVersion
		return allSeen && sameBackends(res.Backends, listed)
	})
	if g.kept[listBackends].index == nil {
		t.Error("the Backends were listed in full; want the last list patched with the three named")
	}
	if got := gatheredBackend(last, ns, "api-0"); got == nil || got.Spec.Destination.FQDN.Hostname != "edited.example.com" {
		t.Errorf("the edited Backend is %v; want its new hostname", got)
	}
	if &last.HTTPRoutes[0] != &first.HTTPRoutes[0] {
		t.Error("the HTTPRoutes, with no event, were listed again; want the same list handed out")
	}
	// An event counted whose name an earlier gather already took: nothing to patch.
	g.events.events[listBackends].Add(1)
	if again := gatherOnce(t, g); &again.Backends[0] != &last.Backends[0] {
		t.Error("a count with no name waiting made a new Backend list; want the last one handed out")
	}

	// An HTTPRoute's edit patches the routes as the Backends: every route not edited
	// is the very object handed out before (the routes are held by pointer).
	before := map[string]*gwapiv1.HTTPRoute{}
	for _, r := range last.HTTPRoutes {
		before[r.Name] = r
	}
	edited := before["api-2"].DeepCopy()
	edited.Spec.Hostnames = []gwapiv1.Hostname{"edited.example.com"}
	if err := api.Client.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	patched := gatherUntil(t, g, func(res *egress.Resources) bool {
		r := gatheredRoute(res, ns, "api-2")
		return r != nil && r.ResourceVersion == edited.ResourceVersion
	})
	if g.kept[listHTTPRoutes].index == nil {
		t.Error("the HTTPRoutes were listed in full; want the last list patched with the one edited")
	}
	for _, r := range patched.HTTPRoutes {
		if r.Name != "api-2" && r != before[r.Name] {
			t.Errorf("HTTPRoute %s, not edited, is a new object; want the one handed out before", r.Name)
		}
	}
}

// listedBackends is what a list of the cache holds: each Backend's name and
// resourceVersion.
func listedBackends(t *testing.T, c client.Reader, ns string) map[string]string {
	t.Helper()
	var list egressv1alpha1.BackendList
	if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, b := range list.Items {
		out[b.Name] = b.ResourceVersion
	}
	return out
}

// sameBackends tells whether items are exactly the Backends of want, at its
// resourceVersions, each once.
func sameBackends(items []*egressv1alpha1.Backend, want map[string]string) bool {
	got := map[string]string{}
	for _, b := range items {
		got[b.Name] = b.ResourceVersion
	}
	return len(items) == len(want) && maps.Equal(got, want)
}
