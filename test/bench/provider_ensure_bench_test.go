package bench

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis-io/portcullis/controllers"
	"github.com/portcullis-io/portcullis/controllers/infra"
)

// envEnsureGateways is the number of Gateways of BenchmarkProviderEnsureUnchanged.
const envEnsureGateways = "BENCH_ENSURE_GATEWAYS"

var defaultEnsureGateways = []int{10}

// BenchmarkProviderEnsureUnchanged times what the reconciler's provider step costs after
// a translation that changed no Gateway: the Kubernetes provider's Ensure of every
// Gateway, wired as `portcullis manager` wires it (its client reads the manager's
// cache, built with the manager's cache options, and its API reader the API server).
// One op is one pass over all Gateways; "per-gateway-ms" divides it. Every reconcile
// that translates pays it, whichever tenant's object changed.
func BenchmarkProviderEnsureUnchanged(b *testing.B) {
	for _, n := range sizeList(b, envEnsureGateways, defaultEnsureGateways) {
		b.Run(fmt.Sprintf("gateways=%d", n), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			provider := ensureProvider(ctx, b)
			gws := ensureGateways(ctx, b, provider, n)
			for b.Loop() {
				for _, gw := range gws {
					if _, err := provider.Ensure(ctx, gw); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N*n), "per-gateway-ms")
		})
	}
}

// ensureProvider is the Kubernetes provider on a cache of its own with the manager's
// options.
func ensureProvider(ctx context.Context, b *testing.B) *infra.Kubernetes {
	api := sharedAPIServer(b)
	cached, err := api.CachedClient(ctx, controllers.CacheOptions())
	if err != nil {
		b.Fatal(err)
	}
	provider, err := infra.NewKubernetes(cached, infra.KubernetesOptions{XDSAddress: "portcullis-xds.portcullis-system.svc", XDSPort: 18000, APIReader: api.Client})
	if err != nil {
		b.Fatal(err)
	}
	return provider
}

// ensureGateways makes n Gateways in namespaces of their own and ensures each once, so
// that the timed passes find everything in place.
func ensureGateways(ctx context.Context, b *testing.B, provider *infra.Kubernetes, n int) []infra.Gateway {
	api := sharedAPIServer(b)
	gws := make([]infra.Gateway, n)
	for i := range gws {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ensure-"}}
		if err := api.Client.Create(ctx, ns); err != nil {
			b.Fatal(err)
		}
		gws[i] = infra.Gateway{Name: "egress", Namespace: ns.Name, UID: types.UID(fmt.Sprintf("uid-%d", i)), Generation: 1,
			Listeners: []infra.Listener{{Name: "http", Port: 80, EnvoyPort: 10080}, {Name: "https", Port: 443, EnvoyPort: 10443}}}
		if _, err := provider.Ensure(ctx, gws[i]); err != nil {
			b.Fatal(err)
		}
	}
	return gws
}
