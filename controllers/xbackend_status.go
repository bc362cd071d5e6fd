package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/portcullis-io/portcullis/controllers/status"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// writeXBackends stores the XBackends' parent entries, and removes ours from XBackends
// no route of our Gateways references any more; other controllers' entries stay.
func (w *statusWriter) writeXBackends(ctx context.Context, q *writeQueue, st translate.Statuses, res *egress.Resources) {
	for key, want := range st.XBackends {
		q.do(func() error { return w.mergeXBackend(ctx, key, want.Ancestors) })
	}
	for i := range res.XBackends {
		x := &res.XBackends[i]
		key := x.Namespace + "/" + x.Name
		if _, ok := st.XBackends[key]; ok || !hasXBackendParentOf(x.Status.Ancestors, w) {
			continue
		}
		q.do(func() error { return w.mergeXBackend(ctx, key, nil) })
	}
}

func (w *statusWriter) mergeXBackend(ctx context.Context, key string, want []gwapixv1alpha1.BackendAncestorStatus) error {
	return w.update(ctx, parseKey(key), &gwapixv1alpha1.XBackend{}, want, func(o client.Object) bool {
		x := o.(*gwapixv1alpha1.XBackend)
		merged := status.MergeXBackendParents(x.Status.Ancestors, want, w.controller, w.now())
		changed := !status.XBackendParentsEqual(x.Status.Ancestors, merged)
		x.Status.Ancestors = merged
		return changed
	})
}

func hasXBackendParentOf(parents []gwapixv1alpha1.BackendAncestorStatus, w *statusWriter) bool {
	for _, p := range parents {
		if p.ControllerName == w.controller {
			return true
		}
	}
	return false
}
