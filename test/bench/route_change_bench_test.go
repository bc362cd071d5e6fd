package bench

import (
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds"
)

// BenchmarkOneRouteChanged changes one HTTPRoute among many (its path match, so its
// route table changes) and times translate, build and publish with warm caches, as
// BenchmarkOneBackendChanged does for a Backend. A route's change is a route delta
// (route_delta.go in egress/translate; deltas/op says how many were): the Gateway's
// route side is filed again, every other route from what attaching it filed last time.
func BenchmarkOneRouteChanged(b *testing.B) {
	for _, n := range sizes(b) {
		w := workload{gateways: 1, perGateway: n}
		b.Run(w.String(), func(b *testing.B) {
			b.ReportAllocs()
			res, addrs := w.resources(distinctPairs(b, 2*w.total()))
			versionObjects(res)
			opts := translateOptions(b)
			opts.Cache = translate.NewCache()
			server, builds := xds.New(logr.Discard()), envoyconfig.NewCache()
			republish(b, server, builds, res, addrs, opts)
			before := opts.Cache.Deltas()
			var tr, bu, pu time.Duration
			stopProfile := startProfile(b, w.total())
			cpu := startCPU(b)
			for i := 0; b.Loop(); i++ {
				changeRoute(res, i%len(res.HTTPRoutes), i)
				t, u, p := republish(b, server, builds, res, addrs, opts)
				tr, bu, pu = tr+t, bu+u, pu+p
			}
			cpu.report(b, b.N)
			stopProfile()
			b.ReportMetric(float64(tr.Nanoseconds())/float64(b.N), "translate-ns/op")
			b.ReportMetric(float64(bu.Nanoseconds())/float64(b.N), "build-ns/op")
			b.ReportMetric(float64(pu.Nanoseconds())/float64(b.N), "publish-ns/op")
			b.ReportMetric(float64(opts.Cache.Deltas()-before)/float64(b.N), "deltas/op")
		})
	}
}

// changeRoute replaces HTTPRoute k by a new generation whose only match is a path
// prefix that depends on the iteration.
func changeRoute(res *egress.Resources, k, iter int) {
	next := *res.HTTPRoutes[k].DeepCopy()
	next.Generation++
	next.ResourceVersion = strconv.Itoa(iter + 2)
	prefix, path := gwapiv1.PathMatchPathPrefix, "/v"+strconv.Itoa(iter)
	next.Spec.Rules[0].Matches = []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
	res.HTTPRoutes[k] = next
}
