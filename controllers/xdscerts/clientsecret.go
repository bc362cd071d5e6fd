package xdscerts

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ErrNotEnsured is returned by the methods that need the CA before Ensure succeeded once.
var ErrNotEnsured = errors.New("xdscerts: the xDS certificates are not loaded yet (Ensure has not succeeded)")

// EnsureClientSecret creates or renews the Secret EnvoyClientSecretName in namespace:
// a client certificate for the Envoys of that namespace's Gateways, its key, and the
// trust bundle. owner, when not nil, is added as an owner reference (not a controller
// one: all the Gateways of a namespace share the Secret, and the garbage collector
// deletes it with the last of them); its kind must be in the client's scheme.
func (m *Manager) EnsureClientSecret(ctx context.Context, namespace string, owner client.Object) error {
	st := m.state.Load()
	if st == nil {
		return ErrNotEnsured
	}
	if owner != nil && m.c == nil {
		return errors.New("xdscerts: the certificates are kept in files, which have no owners")
	}
	if owner != nil && owner.GetNamespace() != namespace {
		return fmt.Errorf("xdscerts: owner %s/%s is not in namespace %s", owner.GetNamespace(), owner.GetName(), namespace)
	}
	key := types.NamespacedName{Namespace: namespace, Name: EnvoyClientSecretName}
	_, err := m.ensureLeaf(ctx, key, clientSpec(namespace), st.ca, func(s *corev1.Secret) (bool, error) {
		changed := setLabels(s, map[string]string{EnvoyClientLabel: envoyClientLabelValue})
		if owner == nil {
			return changed, nil
		}
		before := slices.Clone(s.OwnerReferences)
		if err := controllerutil.SetOwnerReference(owner, s, m.c.Scheme()); err != nil {
			return false, err
		}
		return changed || !equality.Semantic.DeepEqual(before, s.OwnerReferences), nil
	})
	return err
}
