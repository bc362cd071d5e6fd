package infra

import (
	"context"
	"slices"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/xdscerts"
)

// countingClient passes everything to the test API server and counts the writes and
// the reads of whole objects (not of metadata only).
type countingClient struct {
	client.Client
	mu            sync.Mutex
	writes, reads int
}

func (c *countingClient) count(write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if write {
		c.writes++
	} else {
		c.reads++
	}
}

func (c *countingClient) counted() (writes, reads int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, r := c.writes, c.reads
	c.writes, c.reads = 0, 0
	return w, r
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, meta := obj.(*metav1.PartialObjectMetadata); !meta {
		c.count(false)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *countingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	c.count(true)
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.count(true)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.count(true)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.count(true)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// countingEnsurer counts the requests for the namespace's xDS client Secret.
type countingEnsurer struct {
	ClientSecretEnsurer
	mu    sync.Mutex
	calls int
}

func (e *countingEnsurer) EnsureClientSecret(ctx context.Context, namespace string, owner client.Object) error {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	return e.ClientSecretEnsurer.EnsureClientSecret(ctx, namespace, owner)
}

func (e *countingEnsurer) counted() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.calls
	e.calls = 0
	return n
}

// TestKubernetesEnsureSkipsTheAPIWhileNothingChanged runs Ensure on one Gateway again
// and again: as long as the Gateway and every object made for it are as the last Ensure
// left them, nothing is written and no object is read whole; an object changed or
// deleted by someone else is put right by the next Ensure. The provider's client (the
// manager's cache in production) is asked for metadata only, so no Secret's data is
// cached for it.
func TestKubernetesEnsureSkipsTheAPIWhileNothingChanged(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	certs, _ := xdsCerts(t)
	cached, direct := &countingClient{Client: k8s(t)}, &countingClient{Client: k8s(t)}
	secrets := &countingEnsurer{ClientSecretEnsurer: certs}
	k, err := NewKubernetes(cached, KubernetesOptions{XDSAddress: testXDSName, XDSPort: 18000, ClientSecrets: secrets, APIReader: direct})
	if err != nil {
		t.Fatal(err)
	}
	gw := testGateway(ns)
	first, err := k.Ensure(ctx, gw)
	if err != nil {
		t.Fatal(err)
	}
	if writes, reads := cached.counted(); writes != 4 || reads != 0 {
		t.Fatalf("first Ensure through the client: %d writes, %d whole-object reads; want the 4 applies and no read", writes, reads)
	}
	if _, reads := direct.counted(); reads == 0 || secrets.counted() != 1 {
		t.Fatal("the first Ensure did not check the names and the client Secret with the API server")
	}
	key := types.NamespacedName{Namespace: ns, Name: ResourceName(gw.Name)}
	ensure := func(t *testing.T) []gwapiv1.GatewayStatusAddress {
		t.Helper()
		addrs, err := k.Ensure(ctx, gw)
		if err != nil {
			t.Fatal(err)
		}
		return addrs
	}
	t.Run("an unchanged Gateway costs no write and no read of a whole object", func(t *testing.T) {
		for range 3 {
			if addrs := ensure(t); !slices.Equal(addressStrings(addrs), addressStrings(first)) {
				t.Fatalf("addresses %v, want %v", addressStrings(addrs), addressStrings(first))
			}
		}
		cw, cr := cached.counted()
		_, dr := direct.counted()
		if n := secrets.counted(); cw+cr+dr+n != 0 {
			t.Fatalf("writes %d, whole reads %d (cache) + %d (API), client Secret requests %d; want none", cw, cr, dr, n)
		}
	})
	t.Run("a Deployment scaled by someone else is scaled back", func(t *testing.T) {
		dep := &appsv1.Deployment{}
		if err := k8s(t).Get(ctx, key, dep); err != nil {
			t.Fatal(err)
		}
		dep.Spec.Replicas = ptr.To[int32](5)
		if err := k8s(t).Update(ctx, dep); err != nil {
			t.Fatal(err)
		}
		ensure(t)
		if err := k8s(t).Get(ctx, key, dep); err != nil || ptr.Deref(dep.Spec.Replicas, 0) != 1 {
			t.Fatalf("replicas %v (%v), want 1", ptr.Deref(dep.Spec.Replicas, 0), err)
		}
	})
	t.Run("a deleted Service is made again and its new address reported", func(t *testing.T) {
		if err := k8s(t).Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
		addrs := ensure(t)
		svc := &corev1.Service{}
		if err := k8s(t).Get(ctx, key, svc); err != nil {
			t.Fatal(err)
		}
		if len(addrs) != 1 || addrs[0].Value != svc.Spec.ClusterIP {
			t.Fatalf("addresses %v, want the new Service's %s", addressStrings(addrs), svc.Spec.ClusterIP)
		}
	})
	t.Run("a deleted client Secret is asked for again", func(t *testing.T) {
		secrets.counted()
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: xdscerts.EnvoyClientSecretName, Namespace: ns}}
		if err := k8s(t).Delete(ctx, secret); err != nil {
			t.Fatal(err)
		}
		ensure(t)
		if n := secrets.counted(); n != 1 {
			t.Fatalf("client Secret requests %d, want 1", n)
		}
		if err := k8s(t).Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the client was never asked for a whole object", func(t *testing.T) {
		if _, reads := cached.counted(); reads != 0 {
			t.Fatalf("%d whole-object reads through the client", reads)
		}
	})
}
