package bench

import (
	"fmt"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis-io/portcullis/egress/translate"
)

// BenchmarkCallerTable is the caller table a pod event recomputes, at the tenancy
// workloads' pod counts (BENCH_TENANCY; make test runs the small default): from the
// pods' claims as the manager keeps them (controllers/pod_index.go), and, for
// comparison, from a List of the pods as the manager made it before the index (every
// Pod struct copied out of the cache, then translate.Callers). B/op is what one pod event
// allocates for its table.
func BenchmarkCallerTable(b *testing.B) {
	for _, w := range tenancy(b) {
		pods := w.callerPods()
		claims := map[types.NamespacedName]translate.CallerClaim{}
		for i := range pods {
			if c, ok := translate.ClaimOf(&pods[i]); ok {
				claims[types.NamespacedName{Namespace: pods[i].Namespace, Name: pods[i].Name}] = c
			}
		}
		b.Run(fmt.Sprintf("pods=%d/claims", w.pods), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := translate.CallersOf(maps.Values(claims), nil); len(got) != len(pods) {
					b.Fatalf("%d callers, want %d", len(got), len(pods))
				}
			}
		})
		b.Run(fmt.Sprintf("pods=%d/listed", w.pods), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				listed := make([]corev1.Pod, len(pods))
				for i := range pods {
					pods[i].DeepCopyInto(&listed[i])
				}
				if got := translate.Callers(listed, nil); len(got) != len(pods) {
					b.Fatalf("%d callers, want %d", len(got), len(pods))
				}
			}
		})
	}
}
