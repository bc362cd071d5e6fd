package bench

import (
	"slices"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// envEnvoyApplySizes lists the Backend counts of BenchmarkEnvoyAppliesOneChange
// (default 100: make test runs every benchmark once).
const envEnvoyApplySizes = "BENCH_ENVOY_APPLY_SIZES"

// BenchmarkEnvoyAppliesOneChange times Envoy's half of a change: one Backend's cluster
// changed among N is published, and the clock runs until Envoy acknowledged every
// type of the new snapshot (the xDS server's Programmed). Over incremental ADS (the
// bootstrap's) Envoy is sent the changed cluster and its endpoints; over
// state-of-the-world ADS it was sent all N clusters and decoded and hashed each. This is
// the part of "first 200 with 10,000 present" that the manager's own speed cannot
// reduce, measured without the manager, the API server or an upstream. The workload is BenchmarkOneBackendChanged's (mTLS Backends, a client
// certificate each over SDS); the change its changeBackend.
func BenchmarkEnvoyAppliesOneChange(b *testing.B) {
	benchEnvoyApplies(b, changeBackend)
}

// BenchmarkEnvoyAppliesOneRouteChange is BenchmarkEnvoyAppliesOneChange with one
// HTTPRoute's path changed instead (changeRoute): the route table of the Gateway, one
// resource holding every virtual host, is what is sent and what Envoy applies.
func BenchmarkEnvoyAppliesOneRouteChange(b *testing.B) {
	benchEnvoyApplies(b, func(res *egress.Resources, k, iter int) { changeRoute(res, k%len(res.HTTPRoutes), iter) })
}

// benchEnvoyApplies times Envoy applying what change makes of the workload.
func benchEnvoyApplies(b *testing.B, change func(res *egress.Resources, k, iter int)) {
	for _, n := range sizeList(b, envEnvoyApplySizes, []int{100}) {
		w := workload{gateways: 1, perGateway: n}
		b.Run(w.String(), func(b *testing.B) {
			res, addrs := w.resources(distinctPairs(b, 2*w.total()))
			opts := translateOptions(b)
			opts.Cache = translate.NewCache()
			key := gatewayNS + "/" + gatewayName(0)
			server, _ := startEnvoyOverADS(b, key, "bench-envoy")
			builds := envoyconfig.NewCache()
			// programmed waits on the server's change notices (an ACK is one), so the
			// time is the ACK's, not a polling interval's.
			programmed := func(timeout time.Duration) {
				deadline := time.After(timeout)
				for {
					ok, _, msg := server.Status(key).Programmed()
					if ok {
						return
					}
					select {
					case <-server.Changes():
					case <-deadline:
						b.Fatalf("Envoy did not acknowledge within %s: %s", timeout, msg)
					}
				}
			}
			republish(b, server, builds, res, addrs, opts)
			programmed(5 * time.Minute) // the first snapshot: N clusters warm
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				change(res, i%w.total(), i)
				_, _, publish := republish(b, server, builds, res, addrs, opts)
				start := time.Now().Add(-publish)
				b.StartTimer()
				programmed(time.Minute)
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(percentile(took, 50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(took, 99).Microseconds())/1000, "p99-ms")
		})
	}
}
