package controllers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// backendStore is a client.Reader over a map of Backends: the "cache" a pure test
// patches from.
type backendStore map[types.NamespacedName]egressv1alpha1.Backend

func (s backendStore) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	b, ok := s[key]
	if !ok {
		return apierrors.NewNotFound(egressv1alpha1.GroupVersion.WithResource("backends").GroupResource(), key.Name)
	}
	*obj.(*egressv1alpha1.Backend) = b
	return nil
}

func (s backendStore) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("backendStore does not list")
}

// randomBackend is a Backend whose hostname and CA Secret come from small pools, so
// that several Backends share a name or a Secret and a value goes only with the last.
func randomBackend(rng *rand.Rand, name string) egressv1alpha1.Backend {
	if rng.IntN(5) == 0 { // a Service destination: no name to resolve, no Secret
		b := egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"}}
		b.Spec.Destination.Type = egressv1alpha1.DestinationTypeService
		return b
	}
	return fqdnBackend(name, fmt.Sprintf("Host-%d.example.com", rng.IntN(6)), fmt.Sprintf("ca-%d", rng.IntN(4)))
}

// TestPatchedWalksEqualWholeWalks patches a Backend list step by step, as the gather
// does after events name a few Backends (edited, deleted, created), and checks after
// every step that the patched list holds exactly the store's Backends, and that the
// walks redone for the named Backends alone give what walking every Backend gives:
// the names to resolve (and whether they changed) and the referenced Secrets.
func TestPatchedWalksEqualWholeWalks(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			store := backendStore{}
			for i := range 12 {
				b := randomBackend(rng, fmt.Sprintf("b%d", i))
				store[client.ObjectKeyFromObject(&b)] = b
			}
			var items []*egressv1alpha1.Backend
			for _, b := range store {
				items = append(items, &b)
			}
			var names namesWalk
			var refs referencesWalk
			names.names(&egress.Resources{Backends: items}, listPatch{})
			refs.references(&egress.Resources{Backends: items}, listPatch{})
			patch := patcher(byPointer[egressv1alpha1.Backend]())
			var index map[types.NamespacedName]int
			for step := range 40 {
				named := changeStore(rng, store)
				kept := slices.Clone(items)
				out, idx, err := patch(context.Background(), store, items, index, named)
				if err != nil {
					t.Fatal(err)
				}
				checkSharedUnlessNamed(t, step, kept, items, out.([]*egressv1alpha1.Backend), named)
				p := listPatch{from: items, names: named, index: idx}
				items, index = out.([]*egressv1alpha1.Backend), idx
				checkPatchedStep(t, step, store, items, index, &names, &refs, p)
			}
		})
	}
}

// checkSharedUnlessNamed checks what holding the Backends by pointer is for: the kept
// list is left as it was, and every Backend not named is the very one it held.
func checkSharedUnlessNamed(t *testing.T, step int, kept, from, out []*egressv1alpha1.Backend, named []types.NamespacedName) {
	t.Helper()
	if !slices.Equal(kept, from) {
		t.Fatalf("step %d: the patch changed the list it started from", step)
	}
	was := map[types.NamespacedName]*egressv1alpha1.Backend{}
	for _, b := range from {
		was[client.ObjectKeyFromObject(b)] = b
	}
	for _, b := range out {
		if key := client.ObjectKeyFromObject(b); !slices.Contains(named, key) && was[key] != b {
			t.Fatalf("step %d: Backend %s, not named, is a new object; want the kept one", step, key)
		}
	}
}

// changeStore edits, deletes or creates one to three Backends of store and returns
// their names (a name may come twice, as events of one object do).
func changeStore(rng *rand.Rand, store backendStore) []types.NamespacedName {
	var named []types.NamespacedName
	for range 1 + rng.IntN(3) {
		key := types.NamespacedName{Namespace: "apps", Name: fmt.Sprintf("b%d", rng.IntN(16))}
		if _, ok := store[key]; ok && rng.IntN(3) == 0 {
			delete(store, key)
		} else {
			store[key] = randomBackend(rng, key.Name)
		}
		named = append(named, key)
	}
	if rng.IntN(4) == 0 {
		named = append(named, named[0])
	}
	return named
}

func checkPatchedStep(t *testing.T, step int, store backendStore, items []*egressv1alpha1.Backend, index map[types.NamespacedName]int,
	names *namesWalk, refs *referencesWalk, p listPatch) {
	t.Helper()
	if len(items) != len(store) || len(index) != len(items) {
		t.Fatalf("step %d: %d items, %d indexed, want the store's %d", step, len(items), len(index), len(store))
	}
	for i := range items {
		key := client.ObjectKeyFromObject(items[i])
		if want, ok := store[key]; !ok || index[key] != i || want.Spec.Destination.FQDN != items[i].Spec.Destination.FQDN {
			t.Fatalf("step %d: item %d (%s) is not the store's, or indexed at %d", step, i, key, index[key])
		}
	}
	res := &egress.Resources{Backends: items}
	before := names.out
	gotNames, same := names.names(res, p)
	if want := outsideNames(res); !slices.Equal(gotNames, want) || same != slices.Equal(before, want) {
		t.Fatalf("step %d: names %v (same %v), want %v (before %v)", step, gotNames, same, want, before)
	}
	if got, want := refs.references(res, p), translate.References(res); !slices.Equal(got, want) {
		t.Fatalf("step %d: references %v, want %v", step, got, want)
	}
}

// TestTouchedNamesOverflowToAWholeList checks the names the counting predicate notes: a
// take returns each name once and forgets them; more than patchLimit names, or an event
// without an object, make the next take ask for a whole list, and the one after that
// starts afresh.
func TestTouchedNamesOverflowToAWholeList(t *testing.T) {
	var tn touchedNames
	a := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "a"}}
	tn.note(a)
	tn.note(a)
	if got, ok := tn.take(); !ok || len(got) != 1 || got[0] != client.ObjectKeyFromObject(a) {
		t.Fatalf("take = %v, %v; want [apps/a], true", got, ok)
	}
	if got, ok := tn.take(); !ok || len(got) != 0 {
		t.Fatalf("second take = %v, %v; want nothing, true", got, ok)
	}
	for i := range patchLimit + 1 {
		tn.note(&egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: fmt.Sprint(i)}})
	}
	if _, ok := tn.take(); ok {
		t.Fatalf("take after %d names = ok; want a whole list", patchLimit+1)
	}
	tn.note(nil)
	if _, ok := tn.take(); ok {
		t.Fatal("take after an event without an object = ok; want a whole list")
	}
	tn.note(a)
	if got, ok := tn.take(); !ok || len(got) != 1 {
		t.Fatalf("take after an overflow was taken = %v, %v; want [apps/a], true", got, ok)
	}
}
