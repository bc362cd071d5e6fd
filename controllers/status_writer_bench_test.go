package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// BenchmarkStatusWriterNothingToWrite is the status writer after a translation that
// changed no status, as after one Backend changed among 10,000: every object's stored
// status was verified before, the Backends' wants are the very values of last time (a
// reused unit's) and the routes' are new values equal to the last ones. Nothing reaches
// the API server (the writer has no client: a read would fail the benchmark).
func BenchmarkStatusWriterNothingToWrite(b *testing.B) {
	benchmarkStatusWriterNothingToWrite(b, false)
}

func benchmarkStatusWriterNothingToWrite(b *testing.B, relist bool) {
	const n = 10000
	ctx := context.Background()
	since := metav1.NewTime(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
	accepted := func(msg string) []metav1.Condition {
		return []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: msg, ObservedGeneration: 1, LastTransitionTime: since}}
	}
	res := &egress.Resources{}
	backends := map[string]*egressv1alpha1.BackendStatus{}
	routeWants := func() map[string][]gwapiv1.RouteParentStatus {
		out := make(map[string][]gwapiv1.RouteParentStatus, n)
		for i := range n {
			out[fmt.Sprintf("apps/r%d", i)] = []gwapiv1.RouteParentStatus{{ParentRef: gwapiv1.ParentReference{Name: "egress"},
				ControllerName: "portcullis.io/gateway-controller", Conditions: accepted("Route accepted")}}
		}
		return out
	}
	for i := range n {
		meta := metav1.ObjectMeta{Namespace: "apps", Name: fmt.Sprintf("b%d", i), ResourceVersion: "1"}
		want := &egressv1alpha1.BackendStatus{Conditions: accepted("Backend accepted")}
		backends[meta.Namespace+"/"+meta.Name] = want
		res.Backends = append(res.Backends, &egressv1alpha1.Backend{ObjectMeta: meta, Status: *want})
		meta.Name = fmt.Sprintf("r%d", i)
		res.HTTPRoutes = append(res.HTTPRoutes, &gwapiv1.HTTPRoute{ObjectMeta: meta})
	}
	stored := routeWants()
	for _, r := range res.HTTPRoutes {
		r.Status.Parents = stored[r.Namespace+"/"+r.Name]
	}
	translations := []translate.Statuses{{Backends: backends, HTTPRoutes: routeWants()}, {Backends: backends, HTTPRoutes: routeWants()}}
	w := &statusWriter{controller: "portcullis.io/gateway-controller", now: time.Now}
	if _, err := w.write(ctx, translations[0], res, nil); err != nil { // verifies every status
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if relist {
			b.StopTimer()
			res = &egress.Resources{Backends: slices.Clone(res.Backends), HTTPRoutes: slices.Clone(res.HTTPRoutes)}
			b.StartTimer()
		}
		if _, err := w.write(ctx, translations[i%2], res, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatusWriterNothingToWriteRelisted is BenchmarkStatusWriterNothingToWrite
// with the Backends and routes listed again before each write, as after an edit the
// gatherer patched in its place: every object is a new copy of the same version in the
// same place, so the gathered index points its names at the new lists (indexKind) and
// each status is verified by name and resourceVersion.
func BenchmarkStatusWriterNothingToWriteRelisted(b *testing.B) {
	benchmarkStatusWriterNothingToWrite(b, true)
}
