package controllers

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
