package controllers

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// readsCounted is a client.Reader that counts the Gets of each name and fails those of
// the name in fail.
type readsCounted struct {
	client.Reader
	mu   sync.Mutex
	gets map[string]int
	fail string
}

func (r *readsCounted) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.mu.Lock()
	r.gets[key.Name]++
	fail := r.fail == key.Name
	r.mu.Unlock()
	if fail {
		return errors.New("injected read failure")
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *readsCounted) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets[name]
}

func (r *readsCounted) reset(fail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gets, r.fail = map[string]int{}, fail
}

// TestGatherReadsOnlyTheNotedReferencedObjects runs the gatherer on a real informer
// cache whose Secret metadata events are noted as the manager's watch notes them: with
// no event, a gather reads no referenced Secret and hands out the last ones; after one
// Secret changed it reads that one alone (its metadata from the cache, its data from the
// API server) and gathers its new data; and after a gather failed half-way, the next
// reads every referenced Secret again.
func TestGatherReadsOnlyTheNotedReferencedObjects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "gather-noted"
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
	for _, name := range []string{"a", "b"} {
		be := fqdnBackend(name, name+".example.com", "ca-"+name)
		be.Namespace = ns
		be.Spec.Destination.Ports = []egressv1alpha1.BackendPort{{Name: "https", Port: 443, Protocol: egressv1alpha1.PortProtocolHTTPS}}
		objs = append(objs, &be, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca-" + name}, Data: map[string][]byte{"ca.crt": []byte("one")}})
	}
	for _, o := range objs {
		if err := api.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cache.New(api.Config, cache.Options{Scheme: api.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	g := newGatherer(nil, nil)
	noteSecrets(ctx, t, c, &g.refNotes)
	go func() { _ = c.Start(ctx) }()
	c.WaitForCacheSync(ctx)
	cached, apiReads := &readsCounted{Reader: c}, &readsCounted{Reader: api.Client}
	g.cache, g.api = cached, apiReads
	cached.reset("")
	apiReads.reset("")
	first := gatherUntil(t, g, func(res *egress.Resources) bool { return len(res.Backends) == 2 && len(res.Secrets) == 2 })

	cached.reset("")
	again := gatherOnce(t, g)
	if &again.Secrets[0] != &first.Secrets[0] || cached.count("ca-a")+cached.count("ca-b") != 0 {
		t.Fatalf("a gather with no Secret event read %d Secrets' metadata, handed out the same Secrets: %v; want none read, the same",
			cached.count("ca-a")+cached.count("ca-b"), &again.Secrets[0] == &first.Secrets[0])
	}

	secret := &corev1.Secret{}
	if err := api.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ca-a"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["ca.crt"] = []byte("two")
	if err := api.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	gatherUntil(t, g, func(res *egress.Resources) bool {
		s := gatheredSecret(res, ns, "ca-a")
		return s != nil && string(s.Data["ca.crt"]) == "two"
	})
	if n := cached.count("ca-b"); n != 0 {
		t.Errorf("after only ca-a changed, ca-b's metadata was read %d times; want 0", n)
	}
	if n := apiReads.count("ca-a"); n == 0 {
		t.Error("ca-a changed but its data was not read again from the API server")
	}

	cached.reset("ca-a")
	secret.Data["ca.crt"] = []byte("three")
	if err := api.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	gatherFails(t, g)
	cached.reset("")
	gatherOnce(t, g)
	if cached.count("ca-a") == 0 || cached.count("ca-b") == 0 {
		t.Errorf("after a failed gather the next read ca-a %d and ca-b %d times; want every referenced Secret read again",
			cached.count("ca-a"), cached.count("ca-b"))
	}
}

// noteSecrets notes the Secret metadata events of c through notes' predicate, as the
// manager's metadata watch does.
func noteSecrets(ctx context.Context, t *testing.T, c cache.Cache, notes *refNotes) {
	t.Helper()
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	inf, err := c.GetInformer(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	notes.noting("ConfigMap") // no ConfigMap is referenced here
	p := notes.noting("Secret")
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.Create(event.CreateEvent{Object: o.(client.Object)}) },
		UpdateFunc: func(_, n any) { p.Update(event.UpdateEvent{ObjectNew: n.(client.Object)}) },
		DeleteFunc: func(o any) {
			obj, _ := o.(client.Object)
			p.Delete(event.DeleteEvent{Object: obj})
		},
	}); err != nil {
		t.Fatal(err)
	}
}

// gatherFails gathers until a gather fails, for up to ten seconds.
func gatherFails(t *testing.T, g *gatherer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := g.gather(context.Background()); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no gather read the changed Secret (whose read fails) within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRefNotesTrustOnlyWhatNoEventTouched checks when a gather may hand out the
// referenced objects it read before: never without the watches noting, after a gather
// that did not read what it took, or when the notes overflowed; otherwise every object
// but the noted ones.
func TestRefNotesTrustOnlyWhatNoEventTouched(t *testing.T) {
	a := translate.ObjectRef{Kind: "Secret", Name: types.NamespacedName{Namespace: "apps", Name: "a"}}
	b := translate.ObjectRef{Kind: "Secret", Name: types.NamespacedName{Namespace: "apps", Name: "b"}}
	cmA := translate.ObjectRef{Kind: "ConfigMap", Name: a.Name}
	secretA := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "a"}}
	tests := []struct {
		name      string
		wired     bool
		trustLast bool
		note      func(n *refNotes)
		trusts    map[translate.ObjectRef]bool
		nothing   bool
	}{
		{"watches not noting", false, true, func(*refNotes) {}, map[translate.ObjectRef]bool{a: false, b: false}, false},
		{"only the Secret watch noting", false, true, func(n *refNotes) { n.noting("Secret") }, map[translate.ObjectRef]bool{a: false, cmA: false}, false},
		{"nothing noted", true, true, func(*refNotes) {}, map[translate.ObjectRef]bool{a: true, b: true, cmA: true}, true},
		{"the last gather failed", true, false, func(*refNotes) {}, map[translate.ObjectRef]bool{a: false, b: false}, false},
		{"Secret a noted", true, true, func(n *refNotes) { n.secrets.note(secretA) },
			map[translate.ObjectRef]bool{a: false, b: true, cmA: true}, false},
		{"an event without an object", true, true, func(n *refNotes) { n.configMaps.note(nil) },
			map[translate.ObjectRef]bool{a: false, b: false}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &refNotes{wiredSecrets: tt.wired, wiredConfigMaps: tt.wired}
			tt.note(n)
			got := n.take(tt.trustLast)
			for ref, want := range tt.trusts {
				if got.trusts(ref) != want {
					t.Errorf("trusts(%v) = %v, want %v", ref, !want, want)
				}
			}
			if got.nothingNew() != tt.nothing {
				t.Errorf("nothingNew = %v, want %v", !tt.nothing, tt.nothing)
			}
		})
	}
}
