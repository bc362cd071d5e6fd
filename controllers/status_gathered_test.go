package controllers

import (
	"context"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// countingClient counts the reads and status writes that reach the API server.
type countingClient struct {
	client.Client
	gets, updates atomic.Int32
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *countingClient) Status() client.SubResourceWriter {
	return countingStatus{c.Client.Status(), c}
}

type countingStatus struct {
	client.SubResourceWriter
	c *countingClient
}

func (s countingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.c.updates.Add(1)
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

// TestStatusWriterComparesWithTheGatheredObjectFirst: a status the gathered object
// already carries is neither read again nor written; one the gathered copy does not
// carry (it is older than what the API server holds, or translation says something
// new) is read and, only if it differs there too, written. The gathered object is never
// modified: in the manager it is the informer cache's own.
func TestStatusWriterComparesWithTheGatheredObjectFirst(t *testing.T) {
	ctx := context.Background()
	ns := "status-gathered"
	be := createStatusBackend(t, ns)
	c := &countingClient{Client: api.Client}
	w := &statusWriter{c: c, controller: "portcullis.io/gateway-controller", now: time.Now}
	write := func(message string, gathered egressv1alpha1.Backend) (gets, updates int32) {
		t.Helper()
		c.gets.Store(0)
		c.updates.Store(0)
		st := translate.Statuses{Backends: map[string]*egressv1alpha1.BackendStatus{ns + "/api": {
			Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", Message: message, ObservedGeneration: 1}},
		}}}
		if _, err := w.write(ctx, st, &egress.Resources{Backends: []*egressv1alpha1.Backend{&gathered}}, nil); err != nil {
			t.Fatal(err)
		}
		return c.gets.Load(), c.updates.Load()
	}
	fresh := func() egressv1alpha1.Backend {
		var b egressv1alpha1.Backend
		if err := api.Client.Get(ctx, client.ObjectKeyFromObject(be), &b); err != nil {
			t.Fatal(err)
		}
		return b
	}

	stale := fresh()
	if gets, updates := write("first", stale); gets != 1 || updates != 1 {
		t.Fatalf("a new status: %d reads, %d writes; want 1 and 1", gets, updates)
	}
	current := fresh()
	kept := *current.DeepCopy()
	if gets, updates := write("first", current); gets != 0 || updates != 0 {
		t.Fatalf("the status the gathered object carries: %d reads, %d writes; want none", gets, updates)
	}
	if gets, updates := write("first", stale); gets != 0 || updates != 0 {
		t.Fatalf("a gathered copy older than the version written, same status: %d reads, %d writes; want none", gets, updates)
	}
	if gets, updates := write("second", current); gets != 1 || updates != 1 {
		t.Fatalf("a changed status: %d reads, %d writes; want 1 and 1", gets, updates)
	}
	if current.Status.Conditions[0].Message != kept.Status.Conditions[0].Message || current.ResourceVersion != kept.ResourceVersion {
		t.Fatal("writing modified the gathered object")
	}
}

// createStatusBackend creates namespace ns and a Backend "api" in it, for status tests.
func createStatusBackend(t *testing.T, ns string) *egressv1alpha1.Backend {
	t.Helper()
	ctx := context.Background()
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	be := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}, Spec: egressv1alpha1.BackendSpec{
		Destination: egressv1alpha1.BackendDestination{Type: egressv1alpha1.DestinationTypeFQDN, FQDN: &egressv1alpha1.FQDNDestination{Hostname: "api.example.com"},
			Ports: []egressv1alpha1.BackendPort{{Name: "https", Port: 443, Protocol: egressv1alpha1.PortProtocolHTTPS}}}}}
	if err := api.Client.Create(ctx, be); err != nil {
		t.Fatal(err)
	}
	return be
}

// TestVerifiedStatusesKnowWhatTheNewestVersionSays: what a writer verified counts for
// the version it verified and for gathered copies older than it (a reused translation's),
// and only for an equal want; a gathered copy newer than the entry, or the entry's own
// version with another want, is for merging to tell; a version that cannot be ordered is
// read; an entry no write asked about is dropped at the end of the write.
func TestVerifiedStatusesKnowWhatTheNewestVersionSays(t *testing.T) {
	k := gatheredKey{n: types.NamespacedName{Namespace: "apps", Name: "api"}}
	other := gatheredKey{n: types.NamespacedName{Namespace: "apps", Name: "other"}}
	want := func(msg string) any {
		return &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{{Type: "Accepted", Message: msg}}}
	}
	var v verifiedStatuses
	v.store(k, "17", want("ok"))
	v.store(other, "3", want("ok"))
	v.store(gatheredKey{}, "", want("ok"))
	tests := []struct {
		name     string
		key      gatheredKey
		gathered string
		want     any
		knows    knowledge
	}{
		{"the version verified, an equal want", k, "17", want("ok"), storedSaysWant},
		{"the version verified, another want", k, "17", want("changed"), compareGathered},
		{"an older gathered copy, an equal want", k, "9", want("ok"), storedSaysWant},
		{"an older gathered copy, another want", k, "9", want("changed"), storedSaysOther},
		{"a newer gathered copy", k, "18", want("ok"), compareGathered},
		{"a gathered version that is no integer", k, "x7", want("ok"), storedSaysOther},
		{"an object never verified", gatheredKey{n: types.NamespacedName{Name: "new"}}, "7", want("ok"), compareGathered},
		{"an object without a resourceVersion", gatheredKey{}, "", want("ok"), compareGathered},
	}
	for _, tc := range tests {
		if got := v.knows(tc.key, tc.gathered, tc.want); got != tc.knows {
			t.Errorf("%s: knows %d, want %d", tc.name, got, tc.knows)
		}
	}
	for _, tc := range []struct {
		read  string
		newer bool
	}{{"17", false}, {"16", true}, {"18", false}, {"x", true}} {
		if got := v.knowsNewer(k, tc.read); got != tc.newer {
			t.Errorf("a copy at %q: knowsNewer %v, want %v", tc.read, got, tc.newer)
		}
	}
	v.sweep() // every entry above was asked about but other
	v.sweep() // the second write asks about nothing
	left := 0
	for _, m := range v.kinds {
		left += len(m)
	}
	if v.knows(k, "17", want("ok")) != compareGathered || left != 0 {
		t.Errorf("entries no write asked about were kept: %d left", left)
	}
}

// TestUnverifiedListsWhatMayNeedAWrite: a pass over one kind's wants lists exactly the
// objects whose stored status is not known to say the want (as knows answers object by
// object): a gathered copy newer than the version verified, a different want, an
// object never verified or not gathered; a gathered copy older than the version
// verified is listed only for a different want. The entries it looked at survive the
// write's sweep.
func TestUnverifiedListsWhatMayNeedAWrite(t *testing.T) {
	backend := func(name, rv string) egressv1alpha1.Backend {
		return egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, ResourceVersion: rv}}
	}
	want := func(msg string) *egressv1alpha1.BackendStatus {
		return &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{{Type: "Accepted", Message: msg}}}
	}
	w := &statusWriter{}
	w.gathered.update(&egress.Resources{Backends: egress.PointersTo([]egressv1alpha1.Backend{
		backend("same", "7"), backend("newer", "8"), backend("changed-want", "7"), backend("never-verified", "7"),
		backend("older-same", "6"), backend("older-changed", "6"),
	})})
	typ := reflect.TypeFor[*egressv1alpha1.Backend]()
	for _, name := range []string{"same", "newer", "changed-want", "not-gathered", "older-same", "older-changed"} {
		w.verified.store(gatheredKey{typ, types.NamespacedName{Namespace: "apps", Name: name}}, "7", want("ok"))
	}
	wants := map[string]*egressv1alpha1.BackendStatus{
		"apps/same": want("ok"), "apps/newer": want("ok"), "apps/changed-want": want("changed"),
		"apps/never-verified": want("ok"), "apps/not-gathered": want("ok"),
		"apps/older-same": want("ok"), "apps/older-changed": want("changed"),
	}
	got := unverified(w, typ, wants, storedBackendStatus)
	slices.Sort(got)
	if exp := []string{"apps/changed-want", "apps/never-verified", "apps/newer", "apps/not-gathered", "apps/older-changed"}; !slices.Equal(got, exp) {
		t.Fatalf("unverified = %v, want %v", got, exp)
	}
	w.verified.sweep()
	if w.verified.knows(gatheredKey{typ, types.NamespacedName{Namespace: "apps", Name: "same"}}, "7", want("ok")) != storedSaysWant {
		t.Fatal("the entry unverified looked at was swept")
	}
}

// TestUnverifiedFindsAClusterScopedObjectByItsBareName: a cluster-scoped object's want
// is keyed by its bare name, while the index and the verified entries name it as
// types.NamespacedName prints it ("/name"); a verified one must still be found, or every
// status write would merge it again.
func TestUnverifiedFindsAClusterScopedObjectByItsBareName(t *testing.T) {
	class := func(name string) gwapiv1.GatewayClass {
		return gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7"}}
	}
	w := &statusWriter{}
	w.gathered.update(&egress.Resources{GatewayClasses: []gwapiv1.GatewayClass{class("verified"), class("never-verified")}})
	typ := reflect.TypeFor[*gwapiv1.GatewayClass]()
	w.verified.store(gatheredKey{typ, types.NamespacedName{Name: "verified"}}, "7", "accepted")
	wants := map[string]string{"verified": "accepted", "never-verified": "accepted"}
	same := func(stored any, want string) bool { return stored == want }
	if got := unverified(w, typ, wants, same); !slices.Equal(got, []string{"never-verified"}) {
		t.Fatalf("unverified = %v, want [never-verified]", got)
	}
}
