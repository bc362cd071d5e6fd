package bench

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds"
)

// BenchmarkOneBackendChanged changes one Backend among many (its TLS server name and
// ALPN, so its cluster changes) and times what the reconciler does next: translate
// everything, build every Gateway, publish the snapshot. The caches are warm, as in a
// running manager: they hold what the previous iteration computed, and every object
// is versioned as the API server versions it, so a change is a delta of the last
// translation (deltas/op says how many were). Replacing the Backend (a deep copy, like
// every object a gather lists) is part of the time; it costs microseconds.
func BenchmarkOneBackendChanged(b *testing.B) {
	benchChanges(b, func(res *egress.Resources, i int) { changeBackend(res, i%len(res.Backends), i) })
}

// benchChanges times change, made to the input before each iteration, through
// translate, build and publish with warm caches, at every size, and reports each part
// and the share of changes that were deltas.
func benchChanges(b *testing.B, change func(res *egress.Resources, i int)) {
	for _, n := range sizes(b) {
		w := workload{gateways: 1, perGateway: n}
		b.Run(w.String(), func(b *testing.B) {
			b.ReportAllocs()
			res, addrs := w.resources(distinctPairs(b, 2*w.total()))
			versionObjects(res)
			opts := translateOptions(b)
			opts.Cache = translate.NewCache()
			server, builds := xds.New(logr.Discard()), envoyconfig.NewCache()
			republish(b, server, builds, res, addrs, opts) // the state before the change
			before := opts.Cache.Deltas()
			var tr, bu, pu time.Duration
			stopProfile := startProfile(b, w.total())
			cpu := startCPU(b)
			for i := 0; b.Loop(); i++ {
				change(res, i)
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

// envChangeProfile names a file to write a CPU profile of the timed changes of the
// largest size to: where the time of one change goes.
const envChangeProfile = "BENCH_CHANGE_PROFILE"

// startProfile profiles the changes when envChangeProfile is set and n is the largest
// size; the function it returns stops and writes the profile.
func startProfile(b *testing.B, n int) (stop func()) {
	path := os.Getenv(envChangeProfile)
	if path == "" || n != slices.Max(sizes(b)) {
		return func() {}
	}
	return cpuProfile(b, path)
}

// cpuProfile starts a CPU profile written to path; the function it returns stops and
// writes it.
func cpuProfile(b *testing.B, path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// republish is the reconciler's path from Resources to snapshots, timed by part. It
// fails unless every Gateway's snapshot changed.
func republish(b *testing.B, server *xds.Server, builds *envoyconfig.Cache, res *egress.Resources, addrs egress.Addresses, opts translate.Options) (tr, bu, pu time.Duration) {
	t0 := time.Now()
	result := translate.Translate(res, addrs, opts)
	t1 := time.Now()
	built := make([]envoyconfig.Resources, len(result.Gateways))
	for i, gw := range result.Gateways {
		out, err := builds.Build(gw, envoyconfig.Options{})
		if err != nil {
			b.Fatal(err)
		}
		built[i] = out
	}
	t2 := time.Now()
	for i, gw := range result.Gateways {
		if _, changed, err := server.Publish(gw.Name, built[i]); err != nil || !changed {
			b.Fatalf("publish %s: changed=%v, %v", gw.Name, changed, err)
		}
	}
	return t1.Sub(t0), t2.Sub(t1), time.Since(t2)
}

// changeBackend replaces Backend k by a new version, as an update through the API
// server would, whose server name depends on the iteration.
func changeBackend(res *egress.Resources, k, iter int) {
	next := res.Backends[k].DeepCopy()
	next.Generation++
	next.ResourceVersion = strconv.Itoa(iter + 2)
	sni := fmt.Sprintf("v%d.%s", iter, hostname(next.Name))
	tls := next.Spec.Destination.FQDN.TLS
	tls.ServerName, tls.ALPNProtocols = &sni, []string{"h2", "http/1.1"}[:1+iter%2]
	res.Backends[k] = next
}
