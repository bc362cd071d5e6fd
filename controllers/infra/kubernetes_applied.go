package infra

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/xdscerts"
)

// The reconciler calls Ensure for every Gateway after every translation. Applying four
// objects and reading two Secrets each time cost about 17 ms of API round trips per
// Gateway, so with a hundred tenant Gateways one tenant's Backend edit held the
// reconciler (and every other tenant's change) for seconds. Ensure now skips the API
// while the Gateway asks for the same objects and none of them changed since it
// applied them: a change is seen as a new resourceVersion (or a missing object) in the
// manager's cache of object metadata, so an edit or a deletion by someone else is
// still put right at the next translation, as before.

// applied is what the last complete Ensure of a Gateway did.
type applied struct {
	want     [sha256.Size]byte // wantDigest of the Gateway it applied
	versions objectVersions    // of its objects and its namespace's xDS client Secret, after the apply
	addrs    []gwapiv1.GatewayStatusAddress
}

// objectVersions maps an object's kind to its resourceVersion ("" when it does not exist).
type objectVersions map[string]string

// secretKind keys the namespace's xDS client Secret in objectVersions (kindOf).
const secretKind = "Secret"

// wantDigest identifies what Ensure applies for gw: the objects are built from gw, the
// provider's options (fixed for its life; the bootstrap too is a function of gw and
// them) and the client certificate, whose Secret is followed by its resourceVersion.
// Rendering the bootstrap took 0.9 ms, most of an unchanged Ensure, so it is not hashed.
func wantDigest(gw Gateway) ([sha256.Size]byte, error) {
	js, err := json.Marshal(gw)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(js), nil
}

// unchanged returns the addresses of the last Ensure of gw when it applied the same
// objects and they, and the client Secret, are still as it left them.
func (k *Kubernetes) unchanged(gw Gateway, want [sha256.Size]byte, seen objectVersions) ([]gwapiv1.GatewayStatusAddress, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	a, ok := k.applied[gw.key()]
	if !ok || a.want != want || !maps.Equal(a.versions, seen) {
		return nil, false
	}
	return slices.Clone(a.addrs), true
}

func (k *Kubernetes) remember(gw Gateway, a applied) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.applied[gw.key()] = a
}

func (k *Kubernetes) forget(namespace, name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.applied, Gateway{Namespace: namespace, Name: name}.key())
}

// observe reads the resourceVersions of the Gateway's objects and of its namespace's
// xDS client Secret from the client Ensure writes with: in the manager that is its
// cache, of metadata only, so the check costs no round trip and no Secret's data.
func (k *Kubernetes) observe(ctx context.Context, namespace, name string) (objectVersions, error) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: xdscerts.EnvoyClientSecretName}}
	seen := objectVersions{}
	for _, obj := range append(k.objects(namespace, name), secret) {
		rv, err := k.metadataVersion(ctx, obj)
		if err != nil {
			return nil, err
		}
		seen[kindOf(obj)] = rv
	}
	return seen, nil
}

// metadataVersion is the resourceVersion of obj's namesake, read as metadata only; ""
// when it does not exist.
func (k *Kubernetes) metadataVersion(ctx context.Context, obj client.Object) (string, error) {
	gvk, err := apiutil.GVKForObject(obj, k.c.Scheme())
	if err != nil {
		return "", err
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	err = k.c.Get(ctx, client.ObjectKeyFromObject(obj), meta)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return meta.ResourceVersion, nil
}

// appliedVersion is the resourceVersion the API server returned for an applied object.
func appliedVersion(obj applyObject) string {
	switch o := obj.(type) {
	case *corev1ac.ServiceAccountApplyConfiguration:
		return ptr.Deref(o.ResourceVersion, "")
	case *corev1ac.ConfigMapApplyConfiguration:
		return ptr.Deref(o.ResourceVersion, "")
	case *appsv1ac.DeploymentApplyConfiguration:
		return ptr.Deref(o.ResourceVersion, "")
	case *corev1ac.ServiceApplyConfiguration:
		return ptr.Deref(o.ResourceVersion, "")
	}
	return ""
}
