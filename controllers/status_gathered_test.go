package controllers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	be := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}, Spec: egressv1alpha1.BackendSpec{
		Destination: egressv1alpha1.BackendDestination{Type: egressv1alpha1.DestinationTypeFQDN, FQDN: &egressv1alpha1.FQDNDestination{Hostname: "api.example.com"},
			Ports: []egressv1alpha1.BackendPort{{Name: "https", Port: 443, Protocol: egressv1alpha1.PortProtocolHTTPS}}}}}
	if err := api.Client.Create(ctx, be); err != nil {
		t.Fatal(err)
	}
	c := &countingClient{Client: api.Client}
	w := &statusWriter{c: c, controller: "portcullis.io/gateway-controller", now: time.Now}
	write := func(message string, gathered egressv1alpha1.Backend) (gets, updates int32) {
		t.Helper()
		c.gets.Store(0)
		c.updates.Store(0)
		st := translate.Statuses{Backends: map[string]*egressv1alpha1.BackendStatus{ns + "/api": {
			Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", Message: message, ObservedGeneration: 1}},
		}}}
		if _, err := w.write(ctx, st, &egress.Resources{Backends: []egressv1alpha1.Backend{gathered}}, nil); err != nil {
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
	if gets, updates := write("first", stale); gets != 1 || updates != 0 {
		t.Fatalf("a gathered copy older than the API server's: %d reads, %d writes; want 1 read and no write", gets, updates)
	}
	if gets, updates := write("second", current); gets != 1 || updates != 1 {
		t.Fatalf("a changed status: %d reads, %d writes; want 1 and 1", gets, updates)
	}
	if current.Status.Conditions[0].Message != kept.Status.Conditions[0].Message || current.ResourceVersion != kept.ResourceVersion {
		t.Fatal("writing modified the gathered object")
	}
}

// TestVerifiedStatusesAnswerOnlyForTheSameVersionAndWant: a stored status counts as
// verified only for the object version it was verified at and an equal want; an
// object without a resourceVersion never counts; an entry no write asked about is
// dropped at the end of the write.
func TestVerifiedStatusesAnswerOnlyForTheSameVersionAndWant(t *testing.T) {
	k := gatheredKey{n: types.NamespacedName{Namespace: "apps", Name: "api"}}
	other := gatheredKey{n: types.NamespacedName{Namespace: "apps", Name: "other"}}
	want := func(msg string) any {
		return &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{{Type: "Accepted", Message: msg}}}
	}
	var v verifiedStatuses
	v.store(k, "7", want("ok"))
	v.store(other, "3", want("ok"))
	v.store(gatheredKey{}, "", want("ok"))
	tests := []struct {
		name string
		key  gatheredKey
		rv   string
		want any
		says bool
	}{
		{"the same version and an equal want", k, "7", want("ok"), true},
		{"a newer version", k, "8", want("ok"), false},
		{"a different want", k, "7", want("changed"), false},
		{"an object never verified", gatheredKey{n: types.NamespacedName{Name: "new"}}, "7", want("ok"), false},
		{"an object without a resourceVersion", gatheredKey{}, "", want("ok"), false},
	}
	for _, tc := range tests {
		if got := v.says(tc.key, tc.rv, tc.want); got != tc.says {
			t.Errorf("%s: says %v, want %v", tc.name, got, tc.says)
		}
	}
	v.sweep() // every entry above was asked about but other
	v.sweep() // the second write asks about nothing
	if v.says(k, "7", want("ok")) || len(v.entries) != 0 {
		t.Errorf("entries no write asked about were kept: %d left", len(v.entries))
	}
}
