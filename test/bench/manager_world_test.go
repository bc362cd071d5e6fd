package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers"
	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/xds"
)

// managerWorld is the manager running in-process against the shared API server, as
// `portcullis manager` runs it (controllers.NewReconciler, the real xDS server, the DNS
// guard on a scripted DNS server), with no Envoy: what it publishes is read from the
// xDS server itself.
type managerWorld struct {
	c   client.Client
	dns *dnstest.Server
	xds *xds.Server
	// xdsPort is where the xDS server listens (plaintext, on 127.0.0.1).
	xdsPort uint32
	ns      string // the namespace of this run's Backends and HTTPRoutes
	gateway string // the Gateway's name, in gatewayNS
	// metrics holds the operator's metrics alone (portcullis_*), apart from
	// controller-runtime's registry that waitIdle reads often: it is read only to count.
	metrics *prometheus.Registry
}

// startManagerWorld starts the manager; the world's objects are the caller's to create.
func startManagerWorld(b *testing.B) *managerWorld {
	api := sharedAPIServer(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	log.SetLogger(logr.Discard())
	quietRuntimeMetrics(b)
	run := runs.Add(1)
	w := &managerWorld{c: api.Client, dns: dnstest.NewServer(b), xds: xds.New(logr.Discard()),
		ns: fmt.Sprintf("bench-apps-%d", run), gateway: fmt.Sprintf("egress-%d", run), metrics: prometheus.NewRegistry()}
	w.xdsPort = serveXDS(b, ctx, w.xds)
	store := startDNSGuard(b, ctx, w.dns)
	startManager(b, ctx, api, controllers.Options{ControllerName: egress.ControllerName, XDS: w.xds, DNS: store.store, AddressPolicy: store.policy, Metrics: w.metrics})
	return w
}

// xdsKey is the Gateway's name on the xDS server.
func (w *managerWorld) xdsKey() string { return gatewayNS + "/" + w.gateway }

// baseObjects are the run's namespace, the GatewayClass and a Gateway with one HTTP
// listener on port that admits routes of every namespace.
func baseObjects(ns, gateway string, port uint32) []client.Object {
	from := gwapiv1.NamespacesFromAll
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: className}, Spec: gwapiv1.GatewayClassSpec{ControllerName: egress.ControllerName}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gatewayNS}},
		&gwapiv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Name: gateway, Namespace: gatewayNS},
			Spec: gwapiv1.GatewaySpec{GatewayClassName: className, Listeners: []gwapiv1.Listener{{
				Name: "http", Port: gwapiv1.PortNumber(port), Protocol: gwapiv1.HTTPProtocolType,
				AllowedRoutes: &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &from}},
			}}},
		},
	}
}

// createObjects creates objs one after the other; objects that exist already (the
// GatewayClass and namespaces shared by the runs of one process) are kept.
func createObjects(b *testing.B, c client.Client, objs ...client.Object) {
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// createParallel creates the objects of items 0..n-1 on workers connections at once:
// envtest's API server takes thousands of objects several times faster that way than
// one at a time. The objects of one item are created in order.
func createParallel(b *testing.B, c client.Client, workers, n int, objects func(i int) []client.Object) {
	parallel(b, workers, n, func(i int) error {
		for _, o := range objects(i) {
			if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
			}
		}
		return nil
	})
}

// parallel runs do for 0..n-1 on workers goroutines and fails the benchmark with the
// first error.
func parallel(b *testing.B, workers, n int, do func(i int) error) {
	items := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range workers {
		wg.Go(func() {
			for i := range items {
				if err := do(i); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	for i := range n {
		items <- i
	}
	close(items)
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatalf("%d items: %v", n, *err)
	}
}

// quietRuntimeMetrics takes controller-runtime's Go runtime and process collectors out
// of its registry, once per process. The benchmarks read the registry every idlePoll
// (reconcilerIdle), and in the manager's own process: each reading made those two
// collectors read every runtime metric and /proc, some 2 MB of garbage a change at
// 10,000 Backends (2026-12-02 allocation profile), which a manager scraped every 15 s or
// more does not make. Nothing the benchmarks read comes from them.
func quietRuntimeMetrics(b *testing.B) {
	quietOnce.Do(func() {
		goCollector := collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll))
		process := collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
		quietDone = ctrlmetrics.Registry.Unregister(goCollector) && ctrlmetrics.Registry.Unregister(process)
	})
	if !quietDone {
		b.Fatal("controller-runtime's Go runtime and process collectors could not be unregistered: were their options changed?")
	}
}

var (
	quietOnce sync.Once
	quietDone bool
)

// reconcilerIdle tells whether the Portcullis controller has no reconcile running and
// none queued, from controller-runtime's metrics (one registry per process; a stopped
// manager's gauges read zero), and what the two gauges read.
func reconcilerIdle() (bool, map[string]float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return false, nil, err
	}
	gauges := map[string]float64{}
	busy := 0.0
	for _, f := range families {
		if f.GetName() == "controller_runtime_active_workers" || f.GetName() == "workqueue_depth" {
			gauges[f.GetName()] = portcullisGauge(f.GetMetric())
		}
	}
	gauges["workqueue_depth"] -= float64(staleQueueDepth.Load())
	for _, v := range gauges {
		busy += v
	}
	return busy == 0, gauges, nil
}

// staleQueueDepth is what the Portcullis work queue's depth read before the running
// manager started. The gauge is the process's, by the controller's name, and a manager
// stopped with an item queued leaves it counted: a benchmark's manager then read busy
// forever (BenchmarkPropagation after BenchmarkManagerCreateProgrammed in one process,
// 2026-12-02: "still busy after 1m0s" with workqueue_depth 1 and no worker active, also
// at the code before that day). Managers run one after the other.
var staleQueueDepth atomic.Uint64

// noteStaleQueueDepth reads what stopped managers left in the queue-depth gauge, before
// a new manager starts.
func noteStaleQueueDepth(b *testing.B) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	depth := 0.0
	for _, f := range families {
		if f.GetName() == "workqueue_depth" {
			depth = portcullisGauge(f.GetMetric())
		}
	}
	staleQueueDepth.Store(uint64(depth))
}

// portcullisGauge sums the gauges labelled with the Portcullis controller.
func portcullisGauge(ms []*dto.Metric) float64 {
	sum := 0.0
	for _, m := range ms {
		if ofPortcullis(m) {
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

func ofPortcullis(m *dto.Metric) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == "controller" && l.GetValue() == "portcullis" {
			return true
		}
	}
	return false
}

// reconciles counts the Portcullis controller's reconciles so far in this process
// (controller-runtime's counter, over every result).
func reconciles(b *testing.B) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if ofPortcullis(m) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// reconcilesByHow counts the world's reconciles so far by how they came by their
// translation (portcullis_reconciles_total's label: translated, delta, reused,
// unchanged).
func (w *managerWorld) reconcilesByHow(b *testing.B) map[string]float64 {
	return reconcilesByHow(b, w.metrics)
}

// reconcilesByHow counts the reconciles in reg, the registry of one manager's operator
// metrics, by their translation label.
func reconcilesByHow(b *testing.B, reg prometheus.Gatherer) map[string]float64 {
	families, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "portcullis_reconciles_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "translation" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// idleCollections counts the manager's collections started while idle so far
// (portcullis_idle_collections_total, controllers/idle_gc.go).
func (w *managerWorld) idleCollections(b *testing.B) float64 {
	families, err := w.metrics.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "portcullis_idle_collections_total" && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// reportReconcilesPerTry reports the reconciles a try took on average, by how they came
// by their translation: a change is more than the reconcile that publishes it (status
// writes and the Envoys' answers wake the reconciler again).
func reportReconcilesPerTry(b *testing.B, before, after map[string]float64, tries int) {
	for how, n := range after {
		b.ReportMetric((n-before[how])/float64(tries), "reconciles-"+how+"/try")
	}
}

// waitIdle waits until the reconciler has been idle at two readings quiet apart: the
// status writes and the follow-up reconcile of the last change are over. It reads every
// idlePoll: each reading gathers the whole metrics registry in the manager's process,
// some 300 KB of garbage at 10,000 Backends, and read every 5 ms that was 3.8 MB a
// change, an eighth of what a change itself allocates, hastening the collections the
// timed changes meet.
const idlePoll = 20 * time.Millisecond

func waitIdle(b *testing.B, timeout, quiet time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		idle, gauges, err := reconcilerIdle()
		if err != nil {
			b.Fatal(err)
		}
		if idle {
			time.Sleep(quiet)
			if again, _, _ := reconcilerIdle(); again {
				return
			}
		}
		if time.Now().After(deadline) {
			// The gauges are the process's, shared by every manager a benchmark
			// started in it: which one is stuck tells a reconcile that never ended
			// from a queue left with items.
			b.Fatalf("the reconciler was still busy after %s (%v)", timeout, gauges)
		}
		time.Sleep(idlePoll)
	}
}
