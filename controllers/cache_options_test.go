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

// TestCacheDropsWhatKubectlApplyRepeats creates objects as `kubectl apply` leaves them
// (its last-applied-configuration annotation beside the user's own) and checks that the
// manager's cache keeps the user's annotations without kubectl's, and that a status
// written from the cached copy, as the status writer does, leaves the stored
// annotation as it was: kubectl's next apply still finds it.
func TestCacheDropsWhatKubectlApplyRepeats(t *testing.T) {
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
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns, Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: applied, "team": "payments"}},
		Data:       map[string][]byte{"token": []byte("s3cr3t")},
	}
	class := &gwapiv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "last-applied", Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: applied}},
		Spec:       gwapiv1.GatewayClassSpec{ControllerName: "example.com/not-portcullis"},
	}
	for _, o := range []client.Object{secret, class} {
		if err := api.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	gotSecret, gotClass := &corev1.Secret{}, &gwapiv1.GatewayClass{}
	waitCached(t, cached, client.ObjectKeyFromObject(secret), gotSecret)
	waitCached(t, cached, client.ObjectKeyFromObject(class), gotClass)
	if want := map[string]string{"team": "payments"}; !maps.Equal(gotSecret.Annotations, want) {
		t.Errorf("cached Secret annotations = %v, want %v", gotSecret.Annotations, want)
	}
	if gotClass.Annotations != nil {
		t.Errorf("cached GatewayClass annotations = %v, want none", gotClass.Annotations)
	}

	gotClass.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Pending",
		Message: "not ours", ObservedGeneration: gotClass.Generation, LastTransitionTime: metav1.Now()}}
	if err := cached.Status().Update(ctx, gotClass); err != nil {
		t.Fatal(err)
	}
	stored := &gwapiv1.GatewayClass{}
	if err := api.Client.Get(ctx, client.ObjectKeyFromObject(class), stored); err != nil {
		t.Fatal(err)
	}
	if got := stored.Annotations[corev1.LastAppliedConfigAnnotation]; got != applied {
		t.Errorf("stored annotation after a status write = %q, want %q", got, applied)
	}
	if len(stored.Status.Conditions) != 1 || stored.Status.Conditions[0].Reason != "Pending" {
		t.Errorf("stored conditions = %v, want the one written", stored.Status.Conditions)
	}
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
	tests := []struct {
		name string
		in   map[string]string
		want map[string]string
	}{
		{"no annotations stay none", nil, nil},
		{"kubectl's alone leaves none", map[string]string{last: "{}"}, nil},
		{"the user's stay", map[string]string{last: "{}", "team": "payments"}, map[string]string{"team": "payments"}},
		{"without kubectl's nothing changes", map[string]string{"team": "payments"}, map[string]string{"team": "payments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: tt.in,
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
			out, err := stripForCache(s)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*corev1.Secret)
			if !maps.Equal(got.Annotations, tt.want) || (got.Annotations == nil) != (tt.want == nil) {
				t.Errorf("annotations = %#v, want %#v", got.Annotations, tt.want)
			}
			if got.ManagedFields != nil {
				t.Errorf("managedFields = %v, want none", got.ManagedFields)
			}
		})
	}
}
