package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// BenchmarkManagerOneRouteChanged is BenchmarkManagerOneBackendChanged for an HTTPRoute:
// it gives one route among N a path match of its own through the API server and times
// until the real reconciler has published a snapshot with other routes (the xDS
// server's route version; nothing else changes routes while it runs). The route edit is
// the gather's other large kind: it patches the HTTPRoutes' list as it does the
// Backends'. Afterwards the last route edited must be Accepted at its last generation.
func BenchmarkManagerOneRouteChanged(b *testing.B) {
	benchManagerChanges(b, (*managerWorld).changeRoute, (*managerWorld).verifyRouteAccepted)
}

// changeRoute gives the named HTTPRoute the only match /v<iter> and returns the time
// from the Update call until a snapshot with other routes is published, and the route's
// name. A conflict (a status write in between) restarts the try.
func (w *managerWorld) changeRoute(b *testing.B, name string, iter int) (change, string) {
	for {
		var rt gwapiv1.HTTPRoute
		if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, &rt); err != nil {
			b.Fatal(err)
		}
		prefix, path := gwapiv1.PathMatchPathPrefix, fmt.Sprintf("/v%d", iter)
		rt.Spec.Rules[0].Matches = []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
		if c, ok := w.timedUpdate(b, &rt, resource.RouteType); ok {
			return c, name
		}
	}
}

// verifyRouteAccepted checks that the named HTTPRoute comes to be Accepted by the
// Gateway at its last generation: the reconciler translated the last edit, not only
// some edit.
func (w *managerWorld) verifyRouteAccepted(b *testing.B, name string) {
	deadline := time.Now().Add(time.Minute)
	for {
		var rt gwapiv1.HTTPRoute
		if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, &rt); err != nil {
			b.Fatal(err)
		}
		for _, p := range rt.Status.Parents {
			if c := meta.FindStatusCondition(p.Conditions, string(gwapiv1.RouteConditionAccepted)); c != nil && c.Status == "True" && c.ObservedGeneration == rt.Generation {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("HTTPRoute %s is not Accepted at generation %d within a minute: %+v", name, rt.Generation, rt.Status.Parents)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
