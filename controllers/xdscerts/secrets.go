package xdscerts

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// mutateFunc brings a Secret (fresh from the API server, or new and empty) to what it
// must be and reports whether it changed anything.
type mutateFunc func(s *corev1.Secret) (changed bool, err error)

// syncSecret reads the Secret, lets mutate decide, and creates or updates it when
// something changed. A write that raced with another writer (another replica of the
// manager) is retried from a fresh read, so the decision is always made on the stored
// state. Errors name the Secret, never its content.
func (m *Manager) syncSecret(ctx context.Context, key types.NamespacedName, mutate mutateFunc) (*corev1.Secret, error) {
	var out *corev1.Secret
	raced := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(retry.DefaultRetry, raced, func() error {
		s := &corev1.Secret{}
		err := m.c.Get(ctx, key, s)
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
			err = m.c.Create(ctx, s)
		case changed:
			err = m.c.Update(ctx, s)
		}
		out = s
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", key, err)
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
