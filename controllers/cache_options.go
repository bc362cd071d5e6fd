package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/controllers/infra"
)

// CacheOptions are the manager cache's options: no object keeps its managedFields or
// kubectl's last-applied-configuration annotation, and the kinds whose annotations
// nothing reads keep none (stripForCache); Pods keep only their caller identity
// (PodCacheOptions), and of Deployments and ServiceAccounts only those the Kubernetes
// provider made are watched (it checks that they did not change; whether a name is
// taken by someone else's object it asks the API server).
func CacheOptions() cache.Options {
	ours := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{infra.LabelManagedBy: infra.LabelManagedByValue})}
	return cache.Options{
		DefaultTransform: stripForCache,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:            PodCacheOptions(),
			&appsv1.Deployment{}:     ours,
			&corev1.ServiceAccount{}: ours,
		},
	}
}

// stripManagedFields is controller-runtime's transform that drops managedFields.
var stripManagedFields = cache.TransformStripManagedFields()

// stripForCache drops from an object what the manager never reads and would otherwise
// keep for every object it watches:
//
//   - managedFields: at 10,000 Backends and routes and 20,000 Secrets, tens of MiB;
//   - the annotation `kubectl apply` writes (corev1.LastAppliedConfigAnnotation), which
//     holds the whole applied manifest again: a Secret applied with kubectl is kept
//     twice over, its data once decoded and once as base64 inside that JSON;
//   - every annotation of the kinds whose annotations nothing reads (annotationsUnread):
//     a tenant may write up to 256 KiB of them on each Backend or route it creates, and
//     the manager holding them would let one tenant's objects eat the memory every
//     tenant's configuration depends on.
//
// Nothing is lost on the API server: the manager writes users' objects back only through
// their status subresource, which takes status alone from the request (metadata,
// spec and annotations stay as stored), and it writes its own objects by server-side
// apply, which sends only its own fields.
func stripForCache(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	m, ok := obj.(metav1.Object)
	switch {
	case !ok:
	case annotationsUnread(obj):
		m.SetAnnotations(nil)
	default:
		dropAnnotation(m, corev1.LastAppliedConfigAnnotation)
	}
	return obj, nil
}

// annotationsUnread tells whether obj is of a kind whose annotations neither
// translation nor the controllers read. Gateways and GatewayClasses carry settings in
// theirs; the Deployments and ServiceAccounts the provider made are compared whole; a
// kind not listed keeps its annotations. Secrets and ConfigMaps are watched as metadata
// only: the informer gives that metadata its kind (controller-runtime sets it on what
// the metadata client returns), and the data of those referenced is read from the API
// server (gatherer.read), which drops their annotations too.
func annotationsUnread(obj any) bool {
	switch o := obj.(type) {
	case *egressv1alpha1.Backend, *gwapixv1alpha1.XBackend,
		*gwapiv1.HTTPRoute, *gwapiv1.TLSRoute, *gwapiv1.TCPRoute, *gwapiv1.ReferenceGrant, *gwapiv1.BackendTLSPolicy,
		*corev1.Service, *discoveryv1.EndpointSlice, *corev1.Namespace:
		return true
	case *metav1.PartialObjectMetadata:
		gvk := o.GroupVersionKind()
		return gvk.Group == "" && (gvk.Kind == "Secret" || gvk.Kind == "ConfigMap")
	}
	return false
}

// dropAnnotation removes one annotation, and the map when it was the only one.
func dropAnnotation(m metav1.Object, key string) {
	a := m.GetAnnotations()
	if _, ok := a[key]; !ok {
		return
	}
	if len(a) == 1 {
		m.SetAnnotations(nil)
		return
	}
	delete(a, key)
}
