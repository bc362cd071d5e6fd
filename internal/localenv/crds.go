package localenv

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallCRDs applies the objects of dirs in fsys (CRDs, and the admission policy the
// Gateway API ships beside them) and waits until every CRD is Established, so the
// manager's informers find their types at once. It returns the number of CRDs.
func InstallCRDs(ctx context.Context, c client.Client, fsys fs.FS, dirs []string, timeout time.Duration) (int, error) {
	var objs []*unstructured.Unstructured
	for _, dir := range dirs {
		decoded, err := DecodeDir(fsys, dir)
		if err != nil {
			return 0, err
		}
		objs = append(objs, decoded...)
	}
	if err := Apply(ctx, c, objs); err != nil {
		return 0, err
	}
	var crds []string
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o.GetName())
		}
	}
	deadline := time.Now().Add(timeout)
	for _, name := range crds {
		if err := waitEstablished(ctx, c, name, deadline); err != nil {
			return 0, err
		}
	}
	return len(crds), nil
}

func waitEstablished(ctx context.Context, c client.Client, name string, deadline time.Time) error {
	for {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		err := c.Get(ctx, types.NamespacedName{Name: name}, crd)
		if err == nil && conditionTrue(crd, "Established") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s is not Established in time (last error: %v)", name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// conditionTrue reports whether status.conditions holds the type with status True.
func conditionTrue(o *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}
