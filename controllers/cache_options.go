package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/controllers/infra"
)

// CacheOptions are the manager cache's options: no object keeps its managedFields
// (nothing reads them, and at 10,000 Backends and routes and 20,000 Secrets' metadata
// they are tens of MiB), Pods keep only their caller identity (PodCacheOptions), and of
// Deployments and ServiceAccounts only those the Kubernetes provider made are watched
// (it checks that they did not change; whether a name is taken by someone else's
// object it asks the API server).
func CacheOptions() cache.Options {
	ours := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{infra.LabelManagedBy: infra.LabelManagedByValue})}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:            PodCacheOptions(),
			&appsv1.Deployment{}:     ours,
			&corev1.ServiceAccount{}: ours,
		},
	}
}
