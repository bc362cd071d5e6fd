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
	// stale lists the translated routes of this kind that carry a parent entry of the
	// controller (or whose newer version does, known: statusWriter.wroteNewer) but got
	// no status (written: translation's statuses of the kind).
	stale func(res *egress.Resources, written map[string][]gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController, known func(client.Object) bool) []string
}

var routeKinds = []routeKind{
	{
		statuses: func(st translate.Statuses) map[string][]gwapiv1.RouteParentStatus { return st.HTTPRoutes },
		newObj:   func() client.Object { return &gwapiv1.HTTPRoute{} },
		parents:  func(o client.Object) *[]gwapiv1.RouteParentStatus { return &o.(*gwapiv1.HTTPRoute).Status.Parents },
		stale: func(res *egress.Resources, written map[string][]gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController, known func(client.Object) bool) []string {
			return staleRoutes(res.HTTPRoutes, byPointer[gwapiv1.HTTPRoute, *gwapiv1.HTTPRoute](), func(r *gwapiv1.HTTPRoute) []gwapiv1.RouteParentStatus { return r.Status.Parents }, written, controller, known)
		},
	},
	{
		statuses: func(st translate.Statuses) map[string][]gwapiv1.RouteParentStatus { return st.TLSRoutes },
		newObj:   func() client.Object { return &gwapiv1.TLSRoute{} },
		parents:  func(o client.Object) *[]gwapiv1.RouteParentStatus { return &o.(*gwapiv1.TLSRoute).Status.Parents },
		stale: func(res *egress.Resources, written map[string][]gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController, known func(client.Object) bool) []string {
			return staleRoutes(res.TLSRoutes, byValue[gwapiv1.TLSRoute, *gwapiv1.TLSRoute](), func(r *gwapiv1.TLSRoute) []gwapiv1.RouteParentStatus { return r.Status.Parents }, written, controller, known)
		},
	},
	{
		statuses: func(st translate.Statuses) map[string][]gwapiv1.RouteParentStatus { return st.TCPRoutes },
		newObj:   func() client.Object { return &gwapiv1.TCPRoute{} },
		parents:  func(o client.Object) *[]gwapiv1.RouteParentStatus { return &o.(*gwapiv1.TCPRoute).Status.Parents },
		stale: func(res *egress.Resources, written map[string][]gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController, known func(client.Object) bool) []string {
			return staleRoutes(res.TCPRoutes, byValue[gwapiv1.TCPRoute, *gwapiv1.TCPRoute](), func(r *gwapiv1.TCPRoute) []gwapiv1.RouteParentStatus { return r.Status.Parents }, written, controller, known)
		},
	},
}

// staleRoutes lists the routes among items (held as h says) that carry a parent entry
// of controller and are not keys of written. Each route's "namespace/name" is looked up
// through one buffer, made a string only for the stale ones: making it for each of
// 10,000 routes on every write was 2 MB a change.
func staleRoutes[E any, P client.Object](items []E, h holding[E], parents func(P) []gwapiv1.RouteParentStatus, written map[string][]gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController, known func(client.Object) bool) []string {
	var out []string
	var key []byte
	for i := range items {
		p := h.object(&items[i]).(P)
		if !hasRouteParentOf(parents(p), controller) && !known(p) {
			continue
		}
		key = append(append(append(key[:0], p.GetNamespace()...), '/'), p.GetName()...)
		if _, ok := written[string(key)]; !ok {
			out = append(out, string(key))
		}
	}
	return out
}

// routeWrites are the parent-status writes of every route kind whose stored status is
// not known to say translation's.
func (w *statusWriter) routeWrites(ctx context.Context, st translate.Statuses) []func() error {
	var out []func() error
	for _, kind := range routeKinds {
		wants := kind.statuses(st)
		for _, key := range unverified(w, reflect.TypeOf(kind.newObj()), wants, storedRouteParents) {
			want := wants[key]
			out = append(out, func() error { return w.updateRouteParents(ctx, kind, key, want) })
		}
	}
	return out
}

// dropStaleRoutes removes our parent entries from routes translation gave no status.
func (w *statusWriter) dropStaleRoutes(ctx context.Context, q *writeQueue, st translate.Statuses, res *egress.Resources) {
	for _, kind := range routeKinds {
		for _, key := range kind.stale(res, kind.statuses(st), w.controller, w.wroteNewer) {
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
