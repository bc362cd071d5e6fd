package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers"
	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
	"github.com/portcullis-io/portcullis/internal/testpki"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// envPropagationRoutes is how many Backends and HTTPRoutes exist before the timed
// changes (default 10); the target (results.md) is stated for 1,000.
const envPropagationRoutes = "BENCH_PROPAGATION_ROUTES"

// envPropagationProfile names a file to write a CPU profile of the tries to (the manager,
// the xDS server and the benchmark's client: the API server, etcd and Envoy are
// processes of their own), and beside it the allocation profiles before and after the
// tries (FILE.allocs-before, FILE.allocs-after: pprof -diff_base).
const envPropagationProfile = "BENCH_PROPAGATION_PROFILE"

// BenchmarkPropagation creates, through the API server, a Backend and an HTTPRoute for
// a new hostname and times until Envoy first answers 200 for it: the whole path of a
// change (watch, gather, DNS guard resolution, translation, xDS push, Envoy warming the
// cluster, TLS to the upstream). Each iteration is one such change; run it with
// -benchtime=<tries>x for the percentiles.
func BenchmarkPropagation(b *testing.B) {
	present := envInt(b, envPropagationRoutes, 10)
	name := fmt.Sprintf("present=%d", present)
	if spread := envInt(b, envPropagationNamespaces, 1); spread > 1 {
		name += fmt.Sprintf("/namespaces=%d", spread)
	}
	b.Run(name, func(b *testing.B) {
		w := startPropagationWorld(b)
		w.createMany(b, present)
		w.waitSettled(b, present)
		var took []time.Duration
		stopTrace := startTrace(b, os.Getenv(envPropagationTrace))
		stopProfile := profileTries(b)
		before, unchangedBefore := reconciles(b), w.unchanged(b)
		for i := 0; b.Loop(); i++ {
			w.waitQuiet(b)
			markChange(i, "start")
			benchLog.Info("TRY start", "i", i)
			took = append(took, w.propagate(b, fmt.Sprintf("new%d", i)))
			markChange(i, fmt.Sprintf("end %d", took[i].Microseconds()))
			benchLog.Info("TRY end", "i", i, "ms", took[i].Milliseconds())
		}
		stopTrace()
		stopProfile()
		b.ReportMetric((reconciles(b)-before)/float64(len(took)), "reconciles/try")
		b.ReportMetric((w.unchanged(b)-unchangedBefore)/float64(len(took)), "unchanged/try")
		slices.Sort(took)
		for _, p := range []int{50, 95, 99} {
			b.ReportMetric(float64(percentile(took, p).Microseconds())/1000, fmt.Sprintf("p%d-ms", p))
		}
		b.ReportMetric(float64(len(took)), "tries")
		b.ReportMetric(float64(w.fetchTimeouts()), "envoy-fetch-timeouts")
	})
}

// waitQuiet waits, untimed, until the last try's follow-up is over: the reconcile that
// Envoy's acknowledgement wakes (the Backend's Programmed status), Envoy's answers to
// everything sent and the manager's idle collection. Each try then times one change
// applied to a settled system, as BenchmarkManagerChange does; back to back, a try's
// creates waited for the previous try's follow-up reconcile (some 100 ms of CPU at
// 10,000, 2026-11-29).
func (w *propagationWorld) waitQuiet(b *testing.B) {
	b.StopTimer()
	defer b.StartTimer()
	deadline := time.Now().Add(time.Minute)
	for !w.xds.Answered() {
		if time.Now().After(deadline) {
			b.Fatal("Envoy did not answer the last configuration within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitIdle(b, time.Minute, 50*time.Millisecond)
	// The manager collects its heap once idle (controllers/idle_gc.go): that collection
	// finishes before the try, as it would before a change to a settled manager.
	runtime.GC()
}

// unchanged counts the reconciles that returned at once, nothing being new
// (portcullis_reconciles_total{translation="unchanged"}); reconciles/try counts them too.
func (w *propagationWorld) unchanged(b *testing.B) float64 {
	return reconcilesByHow(b, w.metrics)["unchanged"]
}

// fetchTimeouts counts the resources Envoy waited for until its initial fetch timeout
// (15 s) since it started: a cluster whose endpoints or secret never came runs without
// them (no endpoints, or its TLS refused) until they do. Envoy logs each at warn.
func (w *propagationWorld) fetchTimeouts() int {
	return strings.Count(w.envoy.Log(), "initial fetch timed out")
}

// profileTries starts the profiles envPropagationProfile asks for; stop writes them.
func profileTries(b *testing.B) (stop func()) {
	return profileTo(b, os.Getenv(envPropagationProfile))
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

// propagationWorld is the manager running in-process against the API server, with the
// real xDS server, the DNS guard on a scripted DNS server, one Envoy and an HTTPS
// upstream that every Backend resolves to.
type propagationWorld struct {
	c        client.Client
	watch    client.WithWatch // for waiting on statuses without polling
	dns      *dnstest.Server
	upstream *testupstream.Server
	port     uint32 // the Gateway listener port Envoy binds
	ns       string // the namespace of this run's Backends and HTTPRoutes
	world    string // this world's number, the value of its objects' worldLabel
	// namespaces is how many namespaces the present objects are spread over
	// (propagation_tenants_test.go).
	namespaces int
	gateway    string
	http       *http.Client
	xds        *xds.Server // for saying where a wait that timed out stopped (stalled_test.go)
	envoy      *xdstest.Envoy
	// metrics are the operator's metrics, as the manager registers them (each world
	// its own: a process may start several).
	metrics *prometheus.Registry
}

// runs numbers the worlds of one process, so each gets namespaces of its own.
var runs atomic.Int32

func startPropagationWorld(b *testing.B) *propagationWorld {
	api := sharedAPIServer(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	log.SetLogger(benchLog)
	run := runs.Add(1)
	w := &propagationWorld{
		c: api.Client, dns: dnstest.NewServer(b), port: xdstest.FreePort(b),
		ns: fmt.Sprintf("bench-apps-%d", run), gateway: fmt.Sprintf("egress-%d", run), world: fmt.Sprint(run),
		http: &http.Client{Timeout: 5 * time.Second}, metrics: prometheus.NewRegistry(),
	}
	ca := testpki.NewCA(b, "bench upstream CA")
	cert := ca.Issue(b, testpki.Options{CommonName: "upstream", DNSNames: []string{"*." + benchDomain}})
	var err error
	if w.watch, err = client.NewWithWatch(api.Config, client.Options{Scheme: api.Scheme}); err != nil {
		b.Fatal(err)
	}
	w.upstream = testupstream.Start(b, testupstream.Options{Certificate: &cert.TLS, Name: "bench"})
	server := xds.New(benchLog)
	w.xds = server
	xdsPort := serveXDS(b, ctx, server)
	store := startDNSGuard(b, ctx, w.dns)
	startManager(b, ctx, api, controllers.Options{ControllerName: egress.ControllerName, XDS: server, DNS: store.store, AddressPolicy: store.policy, Metrics: w.metrics})
	w.envoy = xdstest.Start(b, xdstest.Config{Bootstrap: func(admin uint32) ([]byte, error) {
		return bootstrap.YAML(bootstrap.Options{Gateway: gatewayNS + "/" + w.gateway, NodeID: "bench", XDSAddress: "127.0.0.1", XDSPort: xdsPort, AdminPort: admin})
	}})
	w.createBase(b, ca.CertPEM)
	w.spreadOver(b, envInt(b, envPropagationNamespaces, 1), ca.CertPEM)
	w.createLoadGenerator(b)
	return w
}

func serveXDS(b *testing.B, ctx context.Context, server *xds.Server) uint32 {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = server.Serve(ctx, lis) }()
	return uint32(lis.Addr().(*net.TCPAddr).Port)
}

// guard is the DNS guard as the manager runs it, resolving against dns; loopback is
// allowed because the upstream listens there.
type guard struct {
	store  *dnsguard.Store
	policy *dnsguard.AddressPolicy
}

func startDNSGuard(b *testing.B, ctx context.Context, dns *dnstest.Server) guard {
	cfg := dnsguard.DefaultConfig()
	cfg.DNSServers, cfg.AllowCIDRs, cfg.IPFamily, cfg.MinTTL = []string{dns.Addr()}, []string{"127.0.0.0/8"}, dnsguard.IPv4, time.Second
	policy, err := cfg.AddressPolicy()
	if err != nil {
		b.Fatal(err)
	}
	resolver, err := dnsguard.NewResolver(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	store := dnsguard.NewStore(resolver, cfg, dnsguard.StoreOptions{})
	go func() { _ = store.Run(ctx) }()
	return guard{store: store, policy: policy}
}

// startManager runs controller-runtime's manager with the Portcullis reconciler until
// ctx ends, as `portcullis manager` does (without an Envoy provider: the benchmark runs
// its Envoy itself).
func startManager(b *testing.B, ctx context.Context, api *testenv.APIServer, opts controllers.Options) {
	noteStaleQueueDepth(b)
	// Benchmarks of several sizes start one manager each in the same process: the
	// controller's name repeats.
	skip := true
	mgr, err := ctrl.NewManager(api.Config, ctrl.Options{Scheme: api.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip},
		Cache:      controllers.CacheOptions()})
	if err != nil {
		b.Fatal(err)
	}
	if err := controllers.NewReconciler(mgr, opts).SetupWithManager(ctx, mgr); err != nil {
		b.Fatal(err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			b.Errorf("manager: %v", err)
		}
	}()
}

// createBase creates the namespaces, the GatewayClass, the Gateway with one HTTP
// listener and the Secret holding the upstream's CA.
func (w *propagationWorld) createBase(b *testing.B, caPEM []byte) {
	createObjects(b, w.c, baseObjects(w.ns, w.gateway, w.port)...)
	createObjects(b, w.c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "upstream-ca", Namespace: w.ns}, Data: map[string][]byte{"ca.crt": caPEM}})
}

// createLoadGenerator creates a running pod of the run's namespace on 127.0.0.1, as the
// kubelet would report it: the Gateway isolates tenants, so the benchmark's requests
// (from 127.0.0.1) are served the routes of that namespace only as that pod's. The pod
// is deleted when the benchmark ends: two running pods on one address identify no
// caller, and the next world of the process (another benchmark) makes its own.
func (w *propagationWorld) createLoadGenerator(b *testing.B) {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "load-generator"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "load", Image: "load"}}},
	}
	if err := w.c.Create(ctx, pod); err != nil {
		b.Fatalf("create the load generator pod: %v", err)
	}
	b.Cleanup(func() {
		if err := w.c.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
			b.Errorf("delete the load generator pod: %v", err)
		}
	})
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: loopback.String(), PodIPs: []corev1.PodIP{{IP: loopback.String()}}}
	if err := w.c.Status().Update(ctx, pod); err != nil {
		b.Fatalf("set the load generator pod's address: %v", err)
	}
}

// objects are the Backend (HTTPS to the upstream, verified against its CA) and the
// HTTPRoute of one hostname, in the world's namespace.
func (w *propagationWorld) objects(name string) []client.Object {
	return w.objectsIn(name, w.ns)
}

// objectsIn are a hostname's objects in namespace ns.
func (w *propagationWorld) objectsIn(name, ns string) []client.Object {
	be := backend(name, hostname(name))
	be.Namespace, be.ResourceVersion = ns, ""
	tls := be.Spec.Destination.FQDN.TLS
	tls.ClientCertificate, tls.CACertificates[0].SecretRef.Name = nil, "upstream-ca"
	be.Spec.Destination.Ports[0].Port = int32(w.upstream.Port())
	rt := route(name, w.gateway, hostname(name))
	rt.Namespace, rt.ResourceVersion = ns, ""
	port := gwapiv1.PortNumber(w.upstream.Port())
	rt.Spec.Rules[0].BackendRefs[0].Port = &port
	return []client.Object{&be, &rt}
}

// createMany creates n hostnames' objects on a few connections at once.
func (w *propagationWorld) createMany(b *testing.B, n int) {
	createParallel(b, w.c, 8, n, func(i int) []client.Object {
		name := objectName(0, i)
		w.dns.Set(hostname(name), hostname(name)+". 60 IN A 127.0.0.1")
		return w.presentObjects(i)
	})
}

// waitSettled waits until every present Backend is Programmed (Envoy acknowledged a
// configuration holding it), its route Accepted and answering, so that the manager's status writes
// for them are done before the timed changes start.
func (w *propagationWorld) waitSettled(b *testing.B, n int) {
	w.waitProgrammed(b, "b0-", n) // the names objectName(0, i)
	for _, i := range w.reachable(n) {
		w.waitAnswers(b, objectName(0, i), settleAnswerWait)
	}
}

// settleAnswerWait bounds how long a Programmed route may take to answer 200. Programmed
// says Envoy accepted every resource type of a version carrying the Backend; Envoy then
// still warms the new cluster on its main thread and hands it to its workers, so a request
// sent at once may meet the route before its cluster (a 503; seen on a slow machine when
// the world was the process's second). A route that never answers fails after this.
const settleAnswerWait = 10 * time.Second

// waitAnswers waits until the hostname answers 200 through Envoy, failing with the last
// answer (its status and the start of its body, where Envoy says why) after wait.
func (w *propagationWorld) waitAnswers(b *testing.B, name string, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for {
		code := w.get(name)
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("a present route answers %d after %s, want 200: %s", code, wait, w.answer(name))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answer is the status line and the start of the body Envoy answers for the hostname,
// or why there was none.
func (w *propagationWorld) answer(name string) string {
	resp, err := w.request(name)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	return fmt.Sprintf("%s %q", resp.Status, body)
}

// propagate creates one hostname's Backend and HTTPRoute and returns how long it took
// until Envoy first answered 200 for it.
func (w *propagationWorld) propagate(b *testing.B, name string) time.Duration {
	w.dns.Set(hostname(name), hostname(name)+". 60 IN A 127.0.0.1")
	start := time.Now()
	for _, o := range w.objects(name) {
		if err := w.c.Create(context.Background(), o); err != nil {
			b.Fatalf("create %T %s: %v", o, name, err)
		}
	}
	deadline := start.Add(30 * time.Second)
	for {
		if w.get(name) == http.StatusOK {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: no 200 through Envoy within 30s", hostname(name))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// get sends one request for the hostname to the Gateway listener and returns the status
// code, 0 when Envoy could not be reached.
func (w *propagationWorld) get(name string) int {
	resp, err := w.request(name)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// request sends one GET for the hostname to the Gateway listener.
func (w *propagationWorld) request(name string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", w.port), nil)
	if err != nil {
		return nil, err
	}
	req.Host = hostname(name)
	return w.http.Do(req)
}

// envPropagationLog, when set, writes the manager's and the xDS server's debug log to
// standard error with millisecond times, and a line where each try starts and ends:
// the reconciles of a try ("translated", with how the translation came about and how
// long the reconcile ran) and the snapshots published.
const envPropagationLog = "BENCH_PROPAGATION_LOG"

var benchLog = func() logr.Logger {
	if os.Getenv(envPropagationLog) == "" {
		return logr.Discard()
	}
	millis := func(c *zapcore.EncoderConfig) { c.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000") }
	return ctrlzap.New(ctrlzap.UseDevMode(true), ctrlzap.Level(zapcore.Level(-2)), ctrlzap.ConsoleEncoder(millis))
}()
