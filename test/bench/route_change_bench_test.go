package bench

import (
	"strconv"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress"
)

// BenchmarkOneRouteChanged changes one HTTPRoute among many (its path match, so its
// route table changes) and times translate, build and publish with warm caches, as
// BenchmarkOneBackendChanged does for a Backend. A route's change is a route delta
// (route_delta.go in egress/translate; deltas/op says how many were): the Gateway's
// route side is filed again, every other route from what attaching it filed last time.
func BenchmarkOneRouteChanged(b *testing.B) {
	benchChanges(b, func(res *egress.Resources, i int) { changeRoute(res, i%len(res.HTTPRoutes), i) })
}

// changeRoute replaces HTTPRoute k by a new generation whose only match is a path
// prefix that depends on the iteration.
func changeRoute(res *egress.Resources, k, iter int) {
	next := res.HTTPRoutes[k].DeepCopy()
	next.Generation++
	next.ResourceVersion = strconv.Itoa(iter + 2)
	prefix, path := gwapiv1.PathMatchPathPrefix, "/v"+strconv.Itoa(iter)
	next.Spec.Rules[0].Matches = []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
	res.HTTPRoutes[k] = next
}
