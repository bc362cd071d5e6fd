package controllers

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/controllers/infra"
)

// TestProviderRefusesForeignObjectsTheCacheDoesNotHold wires the Kubernetes provider as
// `portcullis manager` does (its client reads the manager's cache, which holds only
// the Deployments and ServiceAccounts Portcullis made) and checks that a Deployment of
// a Gateway's name that someone else made, invisible to that cache, still stops Ensure
// from taking it over.
func TestProviderRefusesForeignObjectsTheCacheDoesNotHold(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cached, err := api.CachedClient(ctx, CacheOptions())
	if err != nil {
		t.Fatal(err)
	}
	provider, err := infra.NewKubernetes(cached, infra.KubernetesOptions{XDSAddress: "portcullis-xds.portcullis-system.svc", XDSPort: 18000, APIReader: api.Client})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "foreign-deployment"
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	gw := infra.Gateway{Name: "gw", Namespace: ns, UID: "uid-gw", Generation: 1, Listeners: []infra.Listener{{Name: "http", Port: 80, EnvoyPort: 10080}}}
	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: infra.ResourceName(gw.Name), Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "theirs"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/theirs:1"}}},
			},
		},
	}
	if err := api.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	if err := cached.Get(ctx, client.ObjectKeyFromObject(foreign), meta); !apierrors.IsNotFound(err) {
		t.Fatalf("the manager's cache holds a Deployment Portcullis did not make (Get: %v)", err)
	}
	if _, err := provider.Ensure(ctx, gw); err == nil || !strings.Contains(err.Error(), "not made by Portcullis") {
		t.Fatalf("Ensure = %v, want the foreign Deployment refused", err)
	}
	got := &appsv1.Deployment{}
	if err := api.Client.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil || got.Spec.Template.Spec.Containers[0].Image != "registry.example/theirs:1" {
		t.Fatalf("the foreign Deployment was changed: %v", err)
	}
}

// TestCacheKeepsOnlyTheAnnotationsItReads creates objects as `kubectl apply` leaves
// them (its last-applied-configuration annotation beside the user's own) and checks
// what the manager's cache keeps: a GatewayClass (whose annotations carry settings)
// and a Secret read whole keep the user's annotations without kubectl's, an HTTPRoute
// and a Secret's metadata (how the manager watches Secrets) keep none;
// and a status written from the cached route, as the status writer does, leaves the
// stored annotations as they were: kubectl's next apply still finds its own.
func TestCacheKeepsOnlyTheAnnotationsItReads(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cached, err := api.CachedClient(ctx, CacheOptions())
	if err != nil {
		t.Fatal(err)
	}
	const ns, applied = "last-applied", `{"apiVersion":"v1","kind":"Secret","data":{"token":"czNjcjN0"}}`
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	annotations := func() map[string]string {
		return map[string]string{corev1.LastAppliedConfigAnnotation: applied, "team": "payments"}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns, Annotations: annotations()},
		Data: map[string][]byte{"token": []byte("s3cr3t")}}
	class := &gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "last-applied", Annotations: annotations()},
		Spec: gwapiv1.GatewayClassSpec{ControllerName: "example.com/not-portcullis"}}
	route := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns, Annotations: annotations()}}
	for _, o := range []client.Object{secret, class, route} {
		if err := api.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	users := map[string]string{"team": "payments"}
	for _, tc := range []struct {
		obj, into client.Object
		want      map[string]string
	}{
		{secret, &corev1.Secret{}, users},
		{class, &gwapiv1.GatewayClass{}, users},
		{route, &gwapiv1.HTTPRoute{}, nil},
	} {
		waitCached(t, cached, client.ObjectKeyFromObject(tc.obj), tc.into)
		if got := tc.into.GetAnnotations(); !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("cached %T annotations = %v, want %v", tc.into, got, tc.want)
		}
	}

	// The manager watches Secrets as metadata only.
	secretMeta := metadataOf("Secret")
	waitCached(t, cached, client.ObjectKeyFromObject(secret), secretMeta)
	if secretMeta.Annotations != nil {
		t.Errorf("cached Secret metadata annotations = %v, want none", secretMeta.Annotations)
	}

	cachedRoute := &gwapiv1.HTTPRoute{}
	waitCached(t, cached, client.ObjectKeyFromObject(route), cachedRoute)
	cachedRoute.Status.Parents = []gwapiv1.RouteParentStatus{{
		ParentRef:      gwapiv1.ParentReference{Name: "egress"},
		ControllerName: "example.com/not-portcullis",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Pending",
			Message: "not ours", ObservedGeneration: cachedRoute.Generation, LastTransitionTime: metav1.Now()}},
	}}
	if err := cached.Status().Update(ctx, cachedRoute); err != nil {
		t.Fatal(err)
	}
	stored := &gwapiv1.HTTPRoute{}
	if err := api.Client.Get(ctx, client.ObjectKeyFromObject(route), stored); err != nil {
		t.Fatal(err)
	}
	if want := annotations(); !maps.Equal(stored.Annotations, want) {
		t.Errorf("stored annotations after a status write = %v, want %v", stored.Annotations, want)
	}
	if len(stored.Status.Parents) != 1 || stored.Status.Parents[0].Conditions[0].Reason != "Pending" {
		t.Errorf("stored status = %+v, want the one written", stored.Status)
	}
}

// metadataOf is the metadata of an object of a core kind, as a metadata informer holds it.
func metadataOf(kind string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}

// waitCached reads key from the cache into obj, waiting for the cache to see it.
func waitCached(t *testing.T, c client.Client, key client.ObjectKey, obj client.Object) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Get(context.Background(), key, obj)
		if err == nil {
			return
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("reading %s from the cache: %v", key, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStripForCache(t *testing.T) {
	last := corev1.LastAppliedConfigAnnotation
	users := map[string]string{"team": "payments"}
	tests := []struct {
		name string
		obj  client.Object
		in   map[string]string
		want map[string]string
	}{
		{"no annotations stay none", &corev1.Secret{}, nil, nil},
		{"kubectl's alone leaves none", &corev1.Secret{}, map[string]string{last: "{}"}, nil},
		{"a Secret keeps the user's", &corev1.Secret{}, map[string]string{last: "{}", "team": "payments"}, users},
		{"without kubectl's nothing changes", &corev1.Secret{}, users, users},
		{"a Gateway keeps the user's: settings", &gwapiv1.Gateway{}, map[string]string{last: "{}", "team": "payments"}, users},
		{"a Backend keeps none", &egressv1alpha1.Backend{}, map[string]string{last: "{}", "team": "payments"}, nil},
		{"an HTTPRoute keeps none", &gwapiv1.HTTPRoute{}, users, nil},
		{"a Namespace keeps none", &corev1.Namespace{}, users, nil},
		{"a Secret's metadata keeps none", metadataOf("Secret"), users, nil},
		{"a ConfigMap's metadata keeps none", metadataOf("ConfigMap"), users, nil},
		{"a Deployment's metadata keeps the user's", &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}, users, users},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obj.SetAnnotations(maps.Clone(tt.in))
			tt.obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
			out, err := stripForCache(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(client.Object)
			if a := got.GetAnnotations(); !maps.Equal(a, tt.want) || (a == nil) != (tt.want == nil) {
				t.Errorf("annotations = %#v, want %#v", a, tt.want)
			}
			if got.GetManagedFields() != nil {
				t.Errorf("managedFields = %v, want none", got.GetManagedFields())
			}
		})
	}
}
