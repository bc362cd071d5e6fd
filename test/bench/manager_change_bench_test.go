package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// envManagerSizes lists the Backend (and HTTPRoute) counts of
// BenchmarkManagerOneBackendChanged: "1000,10000,30000". The default is small so that
// `make test` runs it in seconds.
const envManagerSizes = "BENCH_MANAGER_SIZES"

// envManagerProfile names a file to write a CPU profile of the timed changes of the
// largest size to (the manager, the xDS server and the benchmark's polling: the API
// server and etcd are processes of their own), and beside it the allocation profiles
// before and after them (FILE.allocs-before, FILE.allocs-after).
const envManagerProfile = "BENCH_MANAGER_PROFILE"

// envManagerMTLS, when 1, makes each Backend of BenchmarkManagerOneBackendChanged
// originate mutual TLS with a client certificate Secret and a CA bundle Secret of its
// own (20,000 Secrets at 10,000 Backends, the memory target's world) instead of
// verifying against the System store: every gather then accounts for the Secrets the
// Backends refer to.
const envManagerMTLS = "BENCH_MANAGER_MTLS"

// envManagerQuiet is how long the reconciler must stay idle after a change before the
// next one starts (a Go duration; default 50ms). The manager starts its idle garbage
// collection 10 ms into a quiet (controllers/idle_gc.go) and at 10,000 Backends its mark
// phase lasts 85-280 ms: at 50 ms the next change often meets it, as changes some 100 ms
// apart would; at 400ms each change meets a manager that has finished its own follow-up.
const envManagerQuiet = "BENCH_MANAGER_QUIET"

var defaultManagerSizes = []int{50}

// BenchmarkManagerOneBackendChanged changes one Backend among N through the API server
// and times until the real reconciler has published a snapshot with the change: watch
// event, gather (listing the kinds that changed), translation, build and publish,
// everything the manager does before Envoy hears of it. BenchmarkOneBackendChanged
// measures translate, build and publish alone.
//
// The observable is the xDS server's version of the Gateway's clusters
// (Status().TypeVersions): it changes only when a published snapshot's clusters differ
// from the previous one's, and nothing else changes clusters while the benchmark runs
// (the DNS answers are fixed, no Envoy connects). Polled every 0.5 ms. The server's
// Changes channel is the reconciler's own (it re-reads Status on each), so the
// benchmark must not drain it. After the tries, the clusters served over ADS are
// checked to carry the last server name set.
func BenchmarkManagerOneBackendChanged(b *testing.B) {
	benchManagerChanges(b, (*managerWorld).changeOne, (*managerWorld).verifyPublished)
}

// benchManagerChanges times changes through the real manager at each size: change
// makes the i-th change to the named object and returns how long it took to publish,
// and what verify then checks the published state carries.
func benchManagerChanges(b *testing.B, change func(*managerWorld, *testing.B, string, int) (change, string), verify func(*managerWorld, *testing.B, string)) {
	for _, n := range sizeList(b, envManagerSizes, defaultManagerSizes) {
		b.Run(fmt.Sprintf("backends=%d", n), func(b *testing.B) {
			w := startManagerWorld(b)
			setup := time.Now()
			w.createSystemCAPairs(b, n)
			created := time.Since(setup)
			w.waitPublished(b, n)
			settled := time.Since(setup) - created
			var took, answered, collected []time.Duration
			var last string
			stop := startManagerProfile(b, n)
			stopTrace := startManagerTrace(b, n)
			countedBefore, idleBefore := w.reconcilesByHow(b), w.idleCollections(b)
			quiet := envDuration(b, envManagerQuiet, 50*time.Millisecond)
			for i := 0; b.Loop(); i++ {
				markChange(i, "start")
				c, made := change(w, b, objectName(0, (i*7919)%n), i)
				markChange(i, fmt.Sprintf("end %d", c.took.Microseconds()))
				took, answered, last = append(took, c.took), append(answered, c.took-c.update), made
				if c.collected {
					collected = append(collected, c.took)
				}
				waitIdle(b, 5*time.Minute, quiet)
			}
			stop()
			stopTrace()
			countedAfter, idleAfter := w.reconcilesByHow(b), w.idleCollections(b)
			verify(w, b, last)
			reportFirstChange(b, took)
			reportPercentiles(b, took)
			reportPercentilesAs(b, "after-update-", answered)
			// The changes during which the manager's process finished a garbage
			// collection: whether they are the slow ones.
			b.ReportMetric(float64(len(collected)), "gc-tries")
			if len(collected) > 0 {
				reportPercentilesAs(b, "gc-", collected)
			}
			// After the loop: b.Loop's first call resets the reported metrics.
			b.ReportMetric(created.Seconds(), "create-s")
			b.ReportMetric(settled.Seconds(), "settle-s")
			reportReconcilesPerTry(b, countedBefore, countedAfter, len(took))
			// The collections the manager started while idle between the tries: each
			// mark phase lasts 85-280 ms at 10,000, longer than the quiet a try waits.
			b.ReportMetric(idleAfter-idleBefore, "idle-gcs")
		})
	}
}

// reportPercentiles reports p50, p95, p99 and the maximum in milliseconds, and the
// number of tries.
func reportPercentiles(b *testing.B, took []time.Duration) {
	reportPercentilesAs(b, "", took)
	b.ReportMetric(float64(len(took)), "tries")
}

// reportPercentilesAs reports p50, p95, p99 and the maximum in milliseconds, their
// units prefixed.
func reportPercentilesAs(b *testing.B, prefix string, took []time.Duration) {
	slices.Sort(took)
	for _, p := range []int{50, 95, 99, 100} {
		unit := fmt.Sprintf("%sp%d-ms", prefix, p)
		if p == 100 {
			unit = prefix + "max-ms"
		}
		b.ReportMetric(float64(percentile(took, p).Microseconds())/1000, unit)
	}
}

// createSystemCAPairs creates the Gateway and n Backends with their HTTPRoutes, and
// answers every Backend's name with a public address of its own.
func (w *managerWorld) createSystemCAPairs(b *testing.B, n int) {
	createObjects(b, w.c, baseObjects(w.ns, w.gateway, 80)...)
	mtls := os.Getenv(envManagerMTLS) == "1"
	pair := distinctPairs(b, 1)[0]
	createParallel(b, w.c, 16, n, func(k int) []client.Object {
		name := objectName(0, k)
		w.dns.Set(hostname(name), fmt.Sprintf("%s. 3600 IN A %s", hostname(name), publicIP(k)))
		be, rt := systemCABackend(w.ns, name), route(name, w.gateway, hostname(name))
		rt.Namespace, rt.ResourceVersion, rt.Generation = w.ns, "", 0
		if !mtls {
			return []client.Object{be, &rt}
		}
		ca, cert := caSecret(name, pair), clientSecret(name, pair)
		ca.Namespace, cert.Namespace, ca.ResourceVersion, cert.ResourceVersion = w.ns, w.ns, "", ""
		tls := be.Spec.Destination.FQDN.TLS
		tls.WellKnownCACertificates = nil
		tls.CACertificates = []egressv1alpha1.CertificateRef{{SecretRef: egressv1alpha1.ObjectKeyReference{Name: ca.Name}}}
		tls.ClientCertificate = &egressv1alpha1.CertificateRef{SecretRef: egressv1alpha1.ObjectKeyReference{Name: cert.Name}}
		return []client.Object{&ca, &cert, be, &rt}
	})
}

// systemCABackend is the hidden-style Backend: an FQDN destination over HTTPS,
// verified against the System trust store, with a server name of its own.
func systemCABackend(ns, name string) *egressv1alpha1.Backend {
	sni := hostname(name)
	system := egressv1alpha1.WellKnownCACertificatesSystem
	return &egressv1alpha1.Backend{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: egressv1alpha1.BackendSpec{Destination: egressv1alpha1.BackendDestination{
			Type: egressv1alpha1.DestinationTypeFQDN,
			FQDN: &egressv1alpha1.FQDNDestination{
				Hostname: hostname(name),
				TLS:      &egressv1alpha1.BackendTLS{ServerName: &sni, WellKnownCACertificates: &system},
			},
			Ports: []egressv1alpha1.BackendPort{{Name: "https", Port: backendPort, Protocol: egressv1alpha1.PortProtocolHTTPS}},
		}},
	}
}

// waitPublished waits until the published snapshot holds a cluster per Backend and
// the reconciler is idle (every status written).
func (w *managerWorld) waitPublished(b *testing.B, n int) {
	deadline := time.Now().Add(30 * time.Minute)
	for {
		got := w.xds.Status(w.xdsKey()).Resources[resource.ClusterType]
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the published snapshot holds %d clusters after 30 minutes, want %d", got, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.waitStatused(b, n, deadline)
	waitIdle(b, 30*time.Minute, time.Second)
}

// waitStatused waits until each of the n Backends has a status of ours. The first
// status writes of a bulk load trail the publish that carries its clusters, and an idle
// second could come before they were all done: the rest then ran among the timed
// changes (2026-12-03: thousands of the 10,000 in two runs, none in others), whose
// times and allocation profile they filled. The Backends are read in pages, and a read
// that fails is tried again: under a memory limit one list of all 10,000 outlasted the
// API server's minute.
func (w *managerWorld) waitStatused(b *testing.B, n int, deadline time.Time) {
	for {
		statused, err := w.countStatused()
		switch {
		case err == nil && statused >= n:
			return
		case time.Now().After(deadline):
			b.Fatalf("%d of %d Backends have a status after 30 minutes (last read: %v)", statused, n, err)
		}
		time.Sleep(2 * time.Second)
	}
}

// countStatused counts the Backends of the run's namespace that have a status.
func (w *managerWorld) countStatused() (int, error) {
	statused, next := 0, ""
	for {
		var list egressv1alpha1.BackendList
		if err := w.c.List(context.Background(), &list, client.InNamespace(w.ns), client.Limit(1000), client.Continue(next)); err != nil {
			return statused, err
		}
		for i := range list.Items {
			if len(list.Items[i].Status.Conditions) > 0 {
				statused++
			}
		}
		if next = list.Continue; next == "" {
			return statused, nil
		}
	}
}

// reportFirstChange reports the first timed change apart, and the slowest of the rest:
// the first meets what the bulk load left (our own status writes of every object
// outnumber what a gather patches, controllers/gather_patch.go, so it lists the kinds
// in full and the next patches index them again), and with 60 changes the p99 is the
// slowest, which the first often is.
func reportFirstChange(b *testing.B, took []time.Duration) {
	if len(took) < 2 {
		return
	}
	b.ReportMetric(float64(took[0].Microseconds())/1000, "first-ms")
	b.ReportMetric(float64(slices.Max(took[1:]).Microseconds())/1000, "rest-max-ms")
}

// change is one timed change: from the Update call until the snapshot was published,
// the Update call itself (the API server's and etcd's share: the watch event cannot
// come before the write is committed), and whether the process (the manager's: it
// runs in the benchmark's) finished a garbage collection meanwhile.
type change struct {
	took, update time.Duration
	collected    bool
}

// changeOne changes the named Backend's server name and ALPN, so that its cluster
// changes, and returns the time from the Update call until a snapshot with other
// clusters is published, and the new server name. A conflict (a status write in
// between) restarts the try.
func (w *managerWorld) changeOne(b *testing.B, name string, iter int) (change, string) {
	for {
		var be egressv1alpha1.Backend
		if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, &be); err != nil {
			b.Fatal(err)
		}
		sni := fmt.Sprintf("v%d.%s", iter, hostname(name))
		tls := be.Spec.Destination.FQDN.TLS
		tls.ServerName, tls.ALPNProtocols = &sni, []string{"h2", "http/1.1"}[:1+iter%2]
		if c, ok := w.timedUpdate(b, &be, resource.ClusterType); ok {
			return c, sni
		}
	}
}

// timedUpdate updates obj and returns the time from the Update call until a snapshot
// whose resources of typeURL differ is published; false when the Update met a conflict
// (a status write in between: the caller reads the object again and retries).
func (w *managerWorld) timedUpdate(b *testing.B, obj client.Object, typeURL string) (change, bool) {
	key := w.xdsKey()
	before := w.xds.Status(key).TypeVersions[typeURL]
	cycles := gcCycles()
	start := time.Now()
	if err := w.c.Update(context.Background(), obj); apierrors.IsConflict(err) {
		return change{}, false
	} else if err != nil {
		b.Fatal(err)
	}
	update := time.Since(start)
	for w.xds.Status(key).TypeVersions[typeURL] == before {
		if time.Since(start) > time.Minute {
			b.Fatalf("%T %s changed: nothing new of %s published within a minute", obj, obj.GetName(), typeURL)
		}
		time.Sleep(500 * time.Microsecond)
	}
	return change{took: time.Since(start), update: update, collected: gcCycles() != cycles}, true
}

// gcCycles is the number of garbage collections the process has finished.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// verifyPublished checks, after the timed changes, that the clusters the xDS server
// serves carry the last server name set: the version the benchmark watched did change
// for the change it made. It asks as an Envoy of the Gateway would, over ADS.
func (w *managerWorld) verifyPublished(b *testing.B, sni string) {
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", w.xdsPort), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30))) // 30,000 clusters are ~19 MB
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err == nil {
		err = stream.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "bench-check", Cluster: w.xdsKey()}, TypeUrl: resource.ClusterType})
	}
	var resp *discoveryv3.DiscoveryResponse
	if err == nil {
		resp, err = stream.Recv()
	}
	if err != nil {
		b.Fatalf("fetching the published clusters: %v", err)
	}
	for _, r := range resp.GetResources() {
		if bytes.Contains(r.GetValue(), []byte(sni)) {
			return
		}
	}
	b.Fatalf("none of the %d published clusters has the server name %s", len(resp.GetResources()), sni)
}

// startManagerProfile profiles the timed changes when envManagerProfile is set and n
// is the largest size; the function it returns stops and writes the profile.
func startManagerProfile(b *testing.B, n int) (stop func()) {
	if n != slices.Max(sizeList(b, envManagerSizes, defaultManagerSizes)) {
		return func() {}
	}
	return profileTo(b, os.Getenv(envManagerProfile))
}

// profileTo starts a CPU profile written to path (none when path is empty) and writes
// the allocation profile so far to path.allocs-before; stop writes the CPU profile and
// path.allocs-after.
func profileTo(b *testing.B, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	stopCPU := cpuProfile(b, path)
	writeAllocs(b, path+".allocs-before")
	return func() {
		stopCPU()
		writeAllocs(b, path+".allocs-after")
	}
}

// writeAllocs writes the allocation profile so far to path: the profile of the timed
// changes is the one after them with the one before as its base (pprof -diff_base).
func writeAllocs(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}
