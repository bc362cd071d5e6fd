package bench

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// envPropagationNamespaces spreads BenchmarkPropagation's present Backends and
// HTTPRoutes round-robin over this many namespaces (default 1: all in the load
// generator's). The Gateway isolates tenants, so each namespace has a route table of its
// own, and a try's create, in the load generator's namespace, rebuilds that table only:
// 10,000 present over 500 namespaces is a table of 20 hosts, where 10,000 in one
// namespace is one table of 10,000, the worst case for Envoy.
const envPropagationNamespaces = "BENCH_PROPAGATION_NAMESPACES"

// worldLabel marks the objects a world creates before its tries, so that waiting for
// them can watch every namespace without seeing another world's.
const worldLabel = "bench.portcullis.io/world"

// spreadOver creates the namespaces beyond the world's own that the present objects are
// spread over, each with the upstream's CA Secret its Backends verify against.
func (w *propagationWorld) spreadOver(b *testing.B, namespaces int, caPEM []byte) {
	w.namespaces = max(namespaces, 1)
	createParallel(b, w.c, 8, w.namespaces-1, func(k int) []client.Object {
		ns := w.presentNamespace(k + 1)
		return []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "upstream-ca", Namespace: ns}, Data: map[string][]byte{"ca.crt": caPEM}},
		}
	})
}

// presentNamespace is the namespace of the i-th present hostname: the world's own for
// every namespaces-th, so that the load generator can reach some of them.
func (w *propagationWorld) presentNamespace(i int) string {
	if w.namespaces <= 1 || i%w.namespaces == 0 {
		return w.ns
	}
	return fmt.Sprintf("%s-t%d", w.ns, i%w.namespaces)
}

// reachable lists the first and last present hostnames the load generator's table
// holds: those of its own namespace.
func (w *propagationWorld) reachable(n int) []int {
	step := max(w.namespaces, 1)
	return []int{0, (n - 1) / step * step}
}

// presentObjects are the objects of the i-th present hostname, in its namespace and
// labelled as this world's.
func (w *propagationWorld) presentObjects(i int) []client.Object {
	name := objectName(0, i)
	objs := w.objectsIn(name, w.presentNamespace(i))
	for _, o := range objs {
		o.SetLabels(map[string]string{worldLabel: w.world})
	}
	return objs
}

// watchScope is where a wait for objects looks: the world's namespace, which holds every
// object but the spread present ones; for those (no labels given, the present objects
// are spread) every namespace, by the world's label.
func (w *propagationWorld) watchScope(labels client.MatchingLabels) []client.ListOption {
	if w.namespaces <= 1 || labels != nil {
		return []client.ListOption{client.InNamespace(w.ns), labels}
	}
	return []client.ListOption{client.MatchingLabels{worldLabel: w.world}}
}

// TestPresentObjectsSpreadRoundRobin checks the spread's arithmetic: every
// namespaces-th hostname stays in the world's namespace, and the hostnames the
// benchmark checks through the load generator are among those.
func TestPresentObjectsSpreadRoundRobin(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces int
		present    int
		want       []string // presentNamespace of 0..len-1
		reachable  []int
	}{
		{name: "one namespace holds everything", namespaces: 1, present: 10,
			want: []string{"bench-apps-1", "bench-apps-1", "bench-apps-1"}, reachable: []int{0, 9}},
		{name: "four namespaces take turns", namespaces: 4, present: 10,
			want: []string{"bench-apps-1", "bench-apps-1-t1", "bench-apps-1-t2", "bench-apps-1-t3", "bench-apps-1"}, reachable: []int{0, 8}},
		{name: "more namespaces than hostnames", namespaces: 500, present: 3,
			want: []string{"bench-apps-1", "bench-apps-1-t1"}, reachable: []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &propagationWorld{ns: "bench-apps-1", namespaces: tc.namespaces}
			for i, want := range tc.want {
				if got := w.presentNamespace(i); got != want {
					t.Errorf("presentNamespace(%d) = %q, want %q", i, got, want)
				}
			}
			got := w.reachable(tc.present)
			if fmt.Sprint(got) != fmt.Sprint(tc.reachable) {
				t.Errorf("reachable(%d) = %v, want %v", tc.present, got, tc.reachable)
			}
			for _, i := range got {
				if ns := w.presentNamespace(i); ns != w.ns {
					t.Errorf("hostname %d is checked through the load generator but lives in %s", i, ns)
				}
			}
		})
	}
}
