package controllers

import (
	"context"
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

// statusSequence writes one Backend's Programmed condition through a statusWriter and
// reads what is stored, against the real API server.
type statusSequence struct {
	t  *testing.T
	w  *statusWriter
	be *egressv1alpha1.Backend
}

// write stores Programmed=status, translated from gathered (the copy the translation
// read).
func (s statusSequence) write(status metav1.ConditionStatus, gathered egressv1alpha1.Backend) {
	s.t.Helper()
	st := translate.Statuses{Backends: map[string]*egressv1alpha1.BackendStatus{s.be.Namespace + "/" + s.be.Name: {
		Conditions: []metav1.Condition{{Type: egressv1alpha1.ConditionProgrammed, Status: status, Reason: "Test", Message: "test", ObservedGeneration: 1}},
	}}}
	if _, err := s.w.write(context.Background(), st, &egress.Resources{Backends: []*egressv1alpha1.Backend{&gathered}}, nil); err != nil {
		s.t.Fatal(err)
	}
}

func (s statusSequence) stored() egressv1alpha1.Backend {
	s.t.Helper()
	var b egressv1alpha1.Backend
	if err := api.Client.Get(context.Background(), client.ObjectKeyFromObject(s.be), &b); err != nil {
		s.t.Fatal(err)
	}
	return b
}

func programmedOf(b egressv1alpha1.Backend) metav1.ConditionStatus {
	if c := findCond(b.Status.Conditions, egressv1alpha1.ConditionProgrammed); c != nil {
		return c.Status
	}
	return ""
}

// TestStatusThatComesBackIsWrittenAgain: a status that goes True, then False, then True
// again is stored True at the end although the translation that asks for it the second
// time reuses the objects it gathered when the first True was stored (a reused
// translation gathers nothing new, and our own status writes are no input event). That
// copy says True; the object says False.
func TestStatusThatComesBackIsWrittenAgain(t *testing.T) {
	be := createStatusBackend(t, "status-comes-back")
	s := statusSequence{t: t, be: be, w: &statusWriter{c: api.Client, fresh: api.Client, controller: "portcullis.io/gateway-controller", now: time.Now}}
	s.write(metav1.ConditionTrue, s.stored())
	saysTrue := s.stored()
	s.write(metav1.ConditionFalse, saysTrue)
	s.write(metav1.ConditionTrue, saysTrue) // reused: the gathered copy still says True
	if got := programmedOf(s.stored()); got != metav1.ConditionTrue {
		t.Fatalf("stored Programmed=%s; want True", got)
	}
}

// laggingCache answers reads of the object with a copy pinned at an older version, as an
// informer cache does before it sees the writer's last write.
type laggingCache struct {
	client.Client
	pinned *egressv1alpha1.Backend
}

func (c laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if b, ok := obj.(*egressv1alpha1.Backend); ok && c.pinned != nil && key == client.ObjectKeyFromObject(c.pinned) {
		c.pinned.DeepCopyInto(b)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestStatusWriteReadsPastALaggingCache: when the cache still holds a copy older than
// the writer's last write, and that copy already says what translation wants now, the
// writer reads the object from the API server and writes it: the stored status says
// something else. The gathered copy (older still) gives no answer either.
func TestStatusWriteReadsPastALaggingCache(t *testing.T) {
	be := createStatusBackend(t, "status-lagging-cache")
	cache := &laggingCache{Client: api.Client}
	s := statusSequence{t: t, be: be, w: &statusWriter{c: cache, fresh: api.Client, controller: "portcullis.io/gateway-controller", now: time.Now}}
	gathered := s.stored()
	s.write(metav1.ConditionTrue, gathered)
	saysTrue := s.stored()
	cache.pinned = &saysTrue
	s.write(metav1.ConditionFalse, gathered) // the pinned copy is the stored version still
	s.write(metav1.ConditionTrue, gathered)  // the cache says True, the object False since
	if got := programmedOf(s.stored()); got != metav1.ConditionTrue {
		t.Fatalf("stored Programmed=%s; want True", got)
	}
}

// TestParentEntryWrittenAfterTheGatherIsDropped: a route's parent entry written after
// the gather whose translation no longer gives the route a status (its Gateway went in
// between) is dropped, although the gathered copy shows no entry of ours: the writer
// knows it wrote a newer version carrying one. Otherwise it stayed, Accepted for a
// Gateway that was gone, until some later input change.
func TestParentEntryWrittenAfterTheGatherIsDropped(t *testing.T) {
	ctx := context.Background()
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "status-written-after-gather"}}); err != nil {
		t.Fatal(err)
	}
	route := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "status-written-after-gather", Name: "api"},
		Spec: gwapiv1.HTTPRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "egress"}}}}}
	if err := api.Client.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
	const controller = "portcullis.io/gateway-controller"
	w := &statusWriter{c: api.Client, fresh: api.Client, controller: controller, now: time.Now}
	gathered := route.DeepCopy() // no status: gathered before the write below
	key := route.Namespace + "/" + route.Name
	accepted := translate.Statuses{HTTPRoutes: map[string][]gwapiv1.RouteParentStatus{key: {{
		ParentRef: gwapiv1.ParentReference{Name: "egress"}, ControllerName: controller,
		Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "test", ObservedGeneration: 1}},
	}}}}
	res := &egress.Resources{HTTPRoutes: []*gwapiv1.HTTPRoute{gathered}}
	if _, err := w.write(ctx, accepted, res, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.write(ctx, translate.Statuses{}, res, nil); err != nil { // the Gateway is gone
		t.Fatal(err)
	}
	if err := api.Client.Get(ctx, client.ObjectKeyFromObject(route), route); err != nil {
		t.Fatal(err)
	}
	if hasRouteParentOf(route.Status.Parents, controller) {
		t.Fatalf("our parent entry stayed: %+v", route.Status.Parents)
	}
}
