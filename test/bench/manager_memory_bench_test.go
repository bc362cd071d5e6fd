package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
)

// envManagerMemory is the workload of BenchmarkManagerMemory,
// "<backends>/<namespaces>/<pods>"; the targets (issue 16) are stated for
// 10000/500/10000.
const envManagerMemory = "BENCH_MANAGER_MEMORY"

// envManagerMemoryApplied, when 1, creates every Backend, HTTPRoute and Secret as
// `kubectl apply` leaves it: with the last-applied-configuration annotation holding the
// manifest (kubectlApplied).
const envManagerMemoryApplied = "BENCH_MANAGER_MEMORY_APPLIED"

var defaultManagerMemory = workload{gateways: 1, perGateway: 100, namespaces: 10, pods: 100}

// BenchmarkManagerMemory runs `portcullis manager` as a process of its own and reads its
// memory in three states: started with nothing to do; after N mTLS Backends, their
// HTTPRoutes and the 2N Secrets they reference (a client certificate and a CA bundle
// each) are created and every Backend has a status; after N running pods are added
// (their status set through the status subresource: envtest has no kubelet). Memory is
// read once the manager has been quiet (< 3% of a CPU over 3 s), a garbage collection
// has run since (the benchmark makes it reconcile until one does) and it is quiet
// again: VmRSS, VmHWM, and the live heap that collection left.
// One iteration is the whole experiment; run it with -benchtime=1x.
func BenchmarkManagerMemory(b *testing.B) {
	w := defaultManagerMemory
	if v := os.Getenv(envManagerMemory); v != "" {
		var err error
		if w, err = parseTenancy(v); err != nil {
			b.Fatalf("%s: %v", envManagerMemory, err)
		}
	}
	b.Run(w.String(), func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if i > 0 {
				b.Fatal("one iteration is the whole experiment: run with -benchtime=1x")
			}
			measureManagerMemory(b, w)
		}
	})
}

// measureManagerMemory loads the workload into a fresh manager process, in two steps,
// and reports its memory before and after each.
func measureManagerMemory(b *testing.B, w workload) {
	m := startMemoryWorld(b)
	idle := m.read(b)
	loaded := m.step(b, func() { loadBackends(b, m.c, m.dns, w) }, func() { waitStatuses(b, m.c, w) })
	m.p.saveHeapProfile(b)
	pods := m.step(b, func() { loadPods(b, m.c, w) }, func() {})
	for unit, v := range map[string]float64{
		"idle-rss-MiB": idle.rss, "idle-heap-MiB": idle.heap, "rss-MiB": loaded.rss, "hwm-MiB": loaded.hwm, "heap-MiB": loaded.heap,
		"pods-rss-MiB": pods.rss, "pods-hwm-MiB": pods.hwm, "pods-heap-MiB": pods.heap,
		"anon-peak-MiB": loaded.anonPeak, "pods-anon-peak-MiB": pods.anonPeak,
		"pods-added-rss-MiB": pods.rss - loaded.rss, "pods-added-heap-MiB": pods.heap - loaded.heap,
		"create-s": loaded.create.Seconds(), "settle-s": loaded.settle.Seconds(), "pods-create-s": pods.create.Seconds(),
	} {
		b.ReportMetric(v, unit)
	}
}

// memoryWorld is the manager process, the API server it watches and the DNS server its
// guard asks.
type memoryWorld struct {
	c    client.Client
	dns  *dnstest.Server
	p    *managerProcess
	poke func(i int)
}

// memoryReading is the manager's memory after a step (MiB) and how long the step took
// to load and to settle.
type memoryReading struct {
	// anonPeak is the peak anonymous resident memory during the step (sampleAnon).
	rss, hwm, heap, anonPeak float64
	create, settle           time.Duration
}

func startMemoryWorld(b *testing.B) *memoryWorld {
	api := sharedAPIServer(b)
	kubeconfig, err := api.Kubeconfig(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	bin := buildPortcullis(b)
	m := &memoryWorld{c: api.Client, dns: dnstest.NewServer(b), poke: pokeNamespace(b, api.Client)}
	createObjects(b, m.c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNS}})
	m.p = startManagerProcess(b, bin, kubeconfig, m.dns.Addr())
	m.p.waitQuiet(b, 5*time.Minute)
	return m
}

// read reads the manager's memory (managerProcess.memory).
func (m *memoryWorld) read(b *testing.B) memoryReading {
	var r memoryReading
	r.rss, r.hwm, r.heap = m.p.memory(b, m.poke)
	return r
}

// step loads objects, waits until settled says they are handled and the manager is
// quiet, and reads its memory and the peak of its anonymous memory during the step.
func (m *memoryWorld) step(b *testing.B, load, settled func()) memoryReading {
	m.p.takeAnonPeak()
	start := time.Now()
	load()
	created := time.Since(start)
	settled()
	m.p.waitQuiet(b, 30*time.Minute)
	done := time.Since(start)
	r := m.read(b)
	r.create, r.settle, r.anonPeak = created, done-created, m.p.takeAnonPeak()
	return r
}

// pokeNamespace returns a function that annotates the manager's namespace: every
// Namespace event makes the manager reconcile, and nothing it computes depends on the
// annotation.
func pokeNamespace(b *testing.B, c client.Client) func(i int) {
	return func(i int) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNS}}
		patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"bench.portcullis.io/poke":"%d"}}}`, i))
		if err := c.Patch(context.Background(), ns, client.RawPatch(types.MergePatchType, patch)); err != nil {
			b.Fatalf("poking the manager: %v", err)
		}
	}
}

// loadBackends creates the workload's namespaces, Gateway, Backends, HTTPRoutes and
// Secrets, and answers every Backend's name with its public address.
func loadBackends(b *testing.B, c client.Client, dns *dnstest.Server, w workload) {
	res, addrs := w.resources(distinctPairs(b, 2*w.total()))
	for host, r := range addrs {
		dns.Set(host, fmt.Sprintf("%s. 3600 IN A %s", host, r.Vetted[0].IP))
	}
	for i := range res.Namespaces {
		createObjects(b, c, &res.Namespaces[i])
	}
	createObjects(b, c, &res.GatewayClasses[0], &res.Gateways[0])
	applied := os.Getenv(envManagerMemoryApplied) == "1"
	createParallel(b, c, 16, w.total(), func(k int) []client.Object {
		objs := []client.Object{&res.Secrets[2*k], &res.Secrets[2*k+1], res.Backends[k], res.HTTPRoutes[k]}
		for _, o := range objs {
			o.SetResourceVersion("")
			if applied {
				kubectlApplied(b, c.Scheme(), o)
			}
		}
		return objs
	})
}

// waitStatuses waits until the manager has written the status of every Backend of the
// workload (Programmed stays false: no Envoy runs).
func waitStatuses(b *testing.B, c client.Client, w workload) {
	mine := map[string]bool{}
	for k := range w.total() {
		mine[w.namespaceOf(k)] = true
	}
	deadline := time.Now().Add(30 * time.Minute)
	for {
		var list egressv1alpha1.BackendList
		if err := c.List(context.Background(), &list); err != nil {
			b.Fatal(err)
		}
		done := 0
		for _, be := range list.Items {
			if c := meta.FindStatusCondition(be.Status.Conditions, egressv1alpha1.ConditionAccepted); c != nil && mine[be.Namespace] && c.ObservedGeneration == be.Generation {
				done++
			}
		}
		if done >= w.total() {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("after 30 minutes %d of %d Backends have a status", done, w.total())
		}
		time.Sleep(2 * time.Second)
	}
}

// loadPods creates the workload's caller pods and reports each running on its address,
// as the kubelet would.
func loadPods(b *testing.B, c client.Client, w workload) {
	ctx := context.Background()
	parallel(b, 16, w.pods, func(k int) error {
		ip := podIP(k).String()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.namespaceOf(k), Name: fmt.Sprintf("pod-%d", k), Labels: map[string]string{"app": fmt.Sprintf("pod-%d", k)}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
		}
		if err := c.Create(ctx, pod); err != nil {
			return err
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: "192.0.2.1"}
		return c.Status().Update(ctx, pod)
	})
}

// kubectlApplied gives o the annotation `kubectl apply` writes: the manifest applied, as
// compact JSON (apiVersion, kind, name, namespace and the content; a Secret's data in
// base64), which the API server stores beside the object itself.
func kubectlApplied(b *testing.B, scheme *runtime.Scheme, o client.Object) {
	gvk, err := apiutil.GVKForObject(o, scheme)
	if err != nil {
		b.Fatal(err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		b.Fatal(err)
	}
	delete(m, "status")
	m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	m["metadata"] = map[string]any{"name": o.GetName(), "namespace": o.GetNamespace()}
	manifest, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	o.SetAnnotations(map[string]string{corev1.LastAppliedConfigAnnotation: string(manifest)})
}
