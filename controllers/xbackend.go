package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// The Gateway API's XBackend (gateway.networking.x-k8s.io/v1alpha1) is experimental: its
// CRD is installed only when asked for (config/components/xbackend). The manager asks
// discovery once, when it starts, whether the CRD is served; only then does it watch,
// gather and write XBackends. A CRD installed later is taken in at the next start.
// (RBAC: rbac.go.)

// xbackendGVK is the XBackend kind the manager reads.
var xbackendGVK = gwapixv1alpha1.SchemeGroupVersion.WithKind(translate.XBackendKind)

// xbackendServed tells whether the manager's scheme knows XBackend and the cluster
// serves its CRD.
func xbackendServed(mgr ctrl.Manager) (bool, error) {
	if !mgr.GetScheme().Recognizes(xbackendGVK) {
		return false, nil
	}
	_, err := mgr.GetRESTMapper().RESTMapping(xbackendGVK.GroupKind(), xbackendGVK.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering whether %s is served: %w", xbackendGVK.GroupKind(), err)
	}
	return true, nil
}

// watchXBackends adds the XBackend watch when the CRD is served, and makes the gatherer
// read them.
func (r *Reconciler) watchXBackends(mgr ctrl.Manager, b *builder.Builder, h handler.EventHandler, opts ...predicate.Predicate) (*builder.Builder, error) {
	served, err := xbackendServed(mgr)
	if err != nil {
		return nil, err
	}
	r.gather.xbackends = served
	r.log.Info("XBackend (gateway.networking.x-k8s.io/v1alpha1)", "served", served)
	if !served {
		return b, nil
	}
	return b.Watches(&gwapixv1alpha1.XBackend{}, h, r.gather.events.counting(listXBackends, opts...)), nil
}

// gatherXBackends lists the XBackends when their CRD is served.
func (g *gatherer) gatherXBackends(ctx context.Context, res *egress.Resources) error {
	if !g.xbackends {
		return nil
	}
	return g.gatherKind(ctx, listed(listXBackends, func(l *gwapixv1alpha1.XBackendList) *[]gwapixv1alpha1.XBackend { return &l.Items }, &res.XBackends))
}

// xbackendNames are the hostnames of the XBackends the DNS guard must resolve.
func xbackendNames(res *egress.Resources, set map[string]bool) {
	for i := range res.XBackends {
		if h, ok := translate.XBackendHostname(&res.XBackends[i]); ok {
			set[h] = true
		}
	}
}
