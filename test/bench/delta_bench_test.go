package bench

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// BenchmarkDeltaOneBackendChanged is BenchmarkOneBackendChanged's translation on the
// issue's hidden-style input (FQDN Backends verified against the System CAs, as the
// manager benchmark creates them) with every object versioned as the API server does,
// so that a change of one Backend's spec is a delta of the last translation
// (egress/translate/delta.go). It times translation alone and reports how many of the
// changes ran as deltas.
func BenchmarkDeltaOneBackendChanged(b *testing.B) {
	for _, n := range sizes(b) {
		w := workload{gateways: 1, perGateway: n}
		b.Run(w.String(), func(b *testing.B) {
			b.ReportAllocs()
			res, addrs := systemCAResources(w)
			opts := translateOptions(b)
			opts.Cache = translate.NewCache()
			translate.Translate(res, addrs, opts) // the state before the change
			before := opts.Cache.Deltas()
			stop := startProfile(b, w.total())
			var took time.Duration
			for i := 0; b.Loop(); i++ {
				k := i % w.total()
				next := res.Backends[k].DeepCopy()
				next.Generation++
				sni := fmt.Sprintf("v%d.%s", i, hostname(next.Name))
				next.Spec.Destination.FQDN.TLS.ServerName = &sni
				res.Backends[k] = next
				start := time.Now()
				translate.Translate(res, addrs, opts)
				took += time.Since(start)
			}
			stop()
			b.ReportMetric(float64(took.Nanoseconds())/float64(b.N), "translate-ns/op")
			b.ReportMetric(float64(opts.Cache.Deltas()-before)/float64(b.N), "deltas/op")
		})
	}
}

// systemCAResources is the workload with System-CA Backends and every object versioned.
func systemCAResources(w workload) (*egress.Resources, egress.Addresses) {
	res, addrs := w.resources(make([]keyPair, 2*w.total()))
	res.Secrets, res.Pods = nil, nil
	for i := range res.Backends {
		b := res.Backends[i]
		sca := systemCABackend(b.Namespace, b.Name)
		sca.ObjectMeta = b.ObjectMeta
		res.Backends[i] = sca
	}
	versionObjects(res)
	return res, addrs
}

// versionObjects gives every object a UID and a resourceVersion, and a generation of
// at least 1, as the API server gives them: what the manager translates always has
// them, and a delta needs them.
func versionObjects(res *egress.Resources) {
	version := func(m *metav1.ObjectMeta, kind string, i int) {
		m.UID, m.ResourceVersion = types.UID(kind+"/"+m.Namespace+"/"+m.Name), strconv.Itoa(i+1)
		m.Generation = max(m.Generation, 1)
	}
	for i := range res.GatewayClasses {
		version(&res.GatewayClasses[i].ObjectMeta, "GatewayClass", i)
	}
	for i := range res.Gateways {
		version(&res.Gateways[i].ObjectMeta, "Gateway", i)
	}
	for i := range res.HTTPRoutes {
		version(&res.HTTPRoutes[i].ObjectMeta, "HTTPRoute", i)
	}
	for i := range res.Namespaces {
		version(&res.Namespaces[i].ObjectMeta, "Namespace", i)
	}
	for i := range res.Secrets {
		version(&res.Secrets[i].ObjectMeta, "Secret", i)
	}
}
