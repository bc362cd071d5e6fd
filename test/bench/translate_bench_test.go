package bench

import (
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// BenchmarkFullTranslation translates a generated cluster and builds the Envoy
// resources of every Gateway from scratch, as the reconciler does before its first
// publish: every cache starts empty in every iteration. Besides time and allocations it
// reports the peak live heap during an iteration and, from a child process doing one
// cold translation, the peak resident set with the input alone and after translating.
func BenchmarkFullTranslation(b *testing.B) {
	var cases []workload
	for _, n := range sizes(b) {
		cases = append(cases, workload{gateways: 1, perGateway: n})
	}
	cases = append(cases, multi(b))
	for _, w := range cases {
		b.Run(w.String(), func(b *testing.B) { benchTranslation(b, w) })
	}
}

// BenchmarkTenancyTranslation is BenchmarkFullTranslation of the tenancy workload (one
// Gateway isolating tenants, its Backends and HTTPRoutes spread over many namespaces),
// once without pods and once with them: what ten thousand callers add to a full
// translation, in time and memory.
func BenchmarkTenancyTranslation(b *testing.B) {
	for _, with := range tenancy(b) {
		without := with
		without.pods = 0
		for _, w := range []workload{without, with} {
			b.Run(w.String(), func(b *testing.B) { benchTranslation(b, w) })
		}
	}
}

// benchTranslation runs cold translations of w and reports their time, CPU time, peak
// heap and, from a child process, peak RSS.
func benchTranslation(b *testing.B, w workload) {
	b.ReportAllocs()
	res, addrs := w.resources(distinctPairs(b, 2*w.total()))
	opts := translateOptions(b)
	var tr, bu time.Duration
	heap := startHeapSampler()
	cpu := startCPU(b)
	for b.Loop() {
		t, u := fullTranslation(b, res, addrs, opts, w.gateways)
		tr, bu = tr+t, bu+u
	}
	cpu.report(b, b.N)
	b.ReportMetric(heap.peakMiB(), "peak-heap-MiB")
	b.ReportMetric(float64(tr.Nanoseconds())/float64(b.N), "translate-ns/op")
	b.ReportMetric(float64(bu.Nanoseconds())/float64(b.N), "build-ns/op")
	input, peak := childRSS(b, w)
	b.ReportMetric(float64(input)/(1<<20), "input-rss-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
}

// fullTranslation is one cold translation and build, timed by part. It fails unless
// every Gateway was translated.
func fullTranslation(b *testing.B, res *egress.Resources, addrs egress.Addresses, opts translate.Options, gateways int) (tr, bu time.Duration) {
	opts.Cache = translate.NewCache()
	t0 := time.Now()
	result := translate.Translate(res, addrs, opts)
	t1 := time.Now()
	cache := envoyconfig.NewCache()
	for _, gw := range result.Gateways {
		if _, err := cache.Build(gw, envoyconfig.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	if len(result.Gateways) != gateways {
		b.Fatalf("%d Gateways translated, want %d", len(result.Gateways), gateways)
	}
	return t1.Sub(t0), time.Since(t1)
}

// translateOptions are the reconciler's: the DNS guard's address policy and the clock.
func translateOptions(tb testing.TB) translate.Options {
	tb.Helper()
	policy, err := dnsguard.DefaultConfig().AddressPolicy()
	if err != nil {
		tb.Fatal(err)
	}
	return translate.Options{AddressPolicy: policy, ControllerName: string(egress.ControllerName), Now: time.Now()}
}
