package controllers

import (
	"context"
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/status"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// routeKind is what the status writer needs of one route kind: every kind keeps its
// parents the same way (RouteStatus), only the Go types differ.
type routeKind struct {
	// statuses are translation's parent statuses of this kind, by "namespace/name".
	statuses func(translate.Statuses) map[string][]gwapiv1.RouteParentStatus
	newObj   func() client.Object
	parents  func(client.Object) *[]gwapiv1.RouteParentStatus
	// present lists the routes of this kind that were translated, with their parents.
	present func(*egress.Resources) map[string][]gwapiv1.RouteParentStatus
}

var routeKinds = []routeKind{
	{
		statuses: func(st translate.Statuses) map[string][]gwapiv1.RouteParentStatus { return st.HTTPRoutes },
		newObj:   func() client.Object { return &gwapiv1.HTTPRoute{} },
		parents:  func(o client.Object) *[]gwapiv1.RouteParentStatus { return &o.(*gwapiv1.HTTPRoute).Status.Parents },
		present: func(res *egress.Resources) map[string][]gwapiv1.RouteParentStatus {
			return parentsByKey(res.HTTPRoutes, func(r *gwapiv1.HTTPRoute) []gwapiv1.RouteParentStatus { return r.Status.Parents })
		},
	},
	{
		statuses: func(st translate.Statuses) map[string][]gwapiv1.RouteParentStatus { return st.TLSRoutes },
		newObj:   func() client.Object { return &gwapiv1.TLSRoute{} },
		parents:  func(o client.Object) *[]gwapiv1.RouteParentStatus { return &o.(*gwapiv1.TLSRoute).Status.Parents },
		present: func(res *egress.Resources) map[string][]gwapiv1.RouteParentStatus {
			return parentsByKey(res.TLSRoutes, func(r *gwapiv1.TLSRoute) []gwapiv1.RouteParentStatus { return r.Status.Parents })
		},
	},
	{
		statuses: func(st translate.Statuses) map[string][]gwapiv1.RouteParentStatus { return st.TCPRoutes },
		newObj:   func() client.Object { return &gwapiv1.TCPRoute{} },
		parents:  func(o client.Object) *[]gwapiv1.RouteParentStatus { return &o.(*gwapiv1.TCPRoute).Status.Parents },
		present: func(res *egress.Resources) map[string][]gwapiv1.RouteParentStatus {
			return parentsByKey(res.TCPRoutes, func(r *gwapiv1.TCPRoute) []gwapiv1.RouteParentStatus { return r.Status.Parents })
		},
	},
}

func parentsByKey[T any, P interface {
	*T
	client.Object
}](items []T, parents func(P) []gwapiv1.RouteParentStatus) map[string][]gwapiv1.RouteParentStatus {
	out := make(map[string][]gwapiv1.RouteParentStatus, len(items))
	for i := range items {
		p := P(&items[i])
		out[p.GetNamespace()+"/"+p.GetName()] = parents(p)
	}
	return out
}

// writeRoutes queues the parent statuses of every route kind.
func (w *statusWriter) writeRoutes(ctx context.Context, q *writeQueue, st translate.Statuses) {
	for _, kind := range routeKinds {
		t := reflect.TypeOf(kind.newObj())
		for key, want := range kind.statuses(st) {
			if w.verifiedAlready(t, key, want) {
				continue
			}
			q.do(func() error { return w.updateRouteParents(ctx, kind, key, want) })
		}
	}
}

// dropStaleRoutes removes our parent entries from routes translation gave no status.
func (w *statusWriter) dropStaleRoutes(ctx context.Context, q *writeQueue, st translate.Statuses, res *egress.Resources) {
	for _, kind := range routeKinds {
		written := kind.statuses(st)
		for key, parents := range kind.present(res) {
			if _, ok := written[key]; ok || !hasRouteParentOf(parents, w.controller) {
				continue
			}
			q.do(func() error { return w.updateRouteParents(ctx, kind, key, nil) })
		}
	}
}

// updateRouteParents merges want into the route's parents (nil drops ours).
func (w *statusWriter) updateRouteParents(ctx context.Context, kind routeKind, key string, want []gwapiv1.RouteParentStatus) error {
	return w.update(ctx, parseKey(key), kind.newObj(), want, func(o client.Object) bool {
		parents := kind.parents(o)
		// The CRD requires the list, if empty: nil would be sent as null and refused.
		merged := append([]gwapiv1.RouteParentStatus{}, status.MergeRouteParents(*parents, want, w.controller, w.now())...)
		changed := !status.RouteParentsEqual(*parents, merged)
		*parents = merged
		return changed
	})
}
