package xdscerts

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// mutateFunc brings a Secret (fresh from the API server, or new and empty) to what it
// must be and reports whether it changed anything.
type mutateFunc func(s *corev1.Secret) (changed bool, err error)

// secretStore keeps a Manager's Secrets: in the API server in a cluster (apiStore), in
// files on a host (fileStore).
type secretStore interface {
	// sync reads the Secret, lets mutate decide, and stores it when something changed.
	// Errors name the Secret, never its content.
	sync(ctx context.Context, key types.NamespacedName, mutate mutateFunc) error
	// envoyClientNamespaces lists the namespaces holding an EnvoyClientSecretName Secret.
	envoyClientNamespaces(ctx context.Context) ([]string, error)
}

// apiStore keeps the Secrets in the API server.
type apiStore struct{ c client.Client }

// sync creates or updates the Secret when mutate changed something. A write that raced
// with another writer (another replica of the manager) is retried from a fresh read, so
// the decision is always made on the stored state.
func (a apiStore) sync(ctx context.Context, key types.NamespacedName, mutate mutateFunc) error {
	raced := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(retry.DefaultRetry, raced, func() error {
		s := &corev1.Secret{}
		err := a.c.Get(ctx, key, s)
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return err
		}
		if create {
			s = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
				Type:       corev1.SecretTypeTLS,
			}
		}
		changed, err := mutate(s)
		if err != nil {
			return err
		}
		switch {
		case create:
			err = a.c.Create(ctx, s)
		case changed:
			err = a.c.Update(ctx, s)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("secret %s: %w", key, err)
	}
	return nil
}

func (a apiStore) envoyClientNamespaces(ctx context.Context) ([]string, error) {
	var list corev1.SecretList
	if err := a.c.List(ctx, &list, client.MatchingLabels{EnvoyClientLabel: envoyClientLabelValue}); err != nil {
		return nil, fmt.Errorf("list Envoy client Secrets: %w", err)
	}
	var out []string
	for _, s := range list.Items {
		if s.Name == EnvoyClientSecretName {
			out = append(out, s.Namespace)
		}
	}
	return out, nil
}

// setLabels adds labels to s and reports whether any was missing or different.
func setLabels(s *corev1.Secret, labels map[string]string) bool {
	changed := false
	for k, v := range labels {
		if s.Labels[k] != v {
			if s.Labels == nil {
				s.Labels = map[string]string{}
			}
			s.Labels[k] = v
			changed = true
		}
	}
	return changed
}
