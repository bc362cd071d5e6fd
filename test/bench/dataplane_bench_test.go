package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testpki"
)

// Settings of the data-plane benchmarks: the length of one measured round per side, the
// number of rounds (the sides alternate, starting side swapped every round) and the
// load generator's fixed number of concurrent requests.
const (
	envDataPlaneRound       = "BENCH_DATAPLANE_ROUND"
	envDataPlaneRounds      = "BENCH_DATAPLANE_ROUNDS"
	envDataPlaneConcurrency = "BENCH_DATAPLANE_CONCURRENCY"
	// upstreamHost is the name the client asks for and the upstream's certificate carries.
	upstreamHost = "upstream." + benchDomain
)

// BenchmarkDataPlane measures what Portcullis' configuration costs on the data path:
// the same Envoy binary, the same local HTTPS upstream and the same load generator, once
// through the configuration Portcullis generates (served over xDS; the load generator
// is a pod among the tenants of dataPlaneResources, tenant isolation on as by default)
// and once through a minimal hand-written static bootstrap doing the same TLS
// origination (testdata/minimal-envoy.yaml.tmpl). Both Envoys run one worker thread
// (xdstest's --concurrency 1), which leaves the machine's other core to the load
// generator and the upstream. It reports requests per second and p99 latency of each
// side and their ratios (generated / minimal): over all rounds, and the median and
// worst of the per-round ratios. On a machine shared with other work a burst of load
// lands on one side's round; the median of many short alternating rounds is the robust
// figure.
func BenchmarkDataPlane(b *testing.B) {
	s := loadFromEnv(b)
	b.Run(fmt.Sprintf("concurrency=%d", s.conc), func(b *testing.B) {
		up := startUpstream(b)
		sides := []side{
			{name: "generated", port: startGenerated(b, up, true)},
			{name: "minimal", port: startMinimal(b, up)},
		}
		for b.Loop() {
			compareSides(b, sides, s)
		}
	})
}

// BenchmarkDataPlaneIsolation measures what tenant isolation costs on the data path,
// with BenchmarkDataPlane's method: the same Gateway and tenants (dataPlaneResources)
// with isolation on ("isolated": Envoy picks a filter chain per connection by source
// address among a thousand callers) and off ("shared"), the ratio being isolated /
// shared. Envoy picks the chain once per connection, so it runs twice: on keep-alive
// connections, as clients mostly talk to an egress gateway, and with a new connection
// per request, where every request pays the lookup.
func BenchmarkDataPlaneIsolation(b *testing.B) {
	s := loadFromEnv(b)
	b.Run(fmt.Sprintf("concurrency=%d", s.conc), func(b *testing.B) {
		up := startUpstream(b)
		sides := []side{
			{name: "isolated", port: startGenerated(b, up, true)},
			{name: "shared", port: startGenerated(b, up, false)},
		}
		for _, perRequest := range []bool{false, true} {
			s.newConnections = perRequest
			b.Run(connectionsName(perRequest), func(b *testing.B) {
				for b.Loop() {
					compareSides(b, sides, s)
				}
			})
		}
	})
}

func connectionsName(perRequest bool) string {
	if perRequest {
		return "connections=per-request"
	}
	return "connections=keep-alive"
}

// loadSettings say how the sides are compared.
type loadSettings struct {
	round        time.Duration
	rounds, conc int
	// newConnections opens a connection per request instead of keeping them alive.
	newConnections bool
}

func loadFromEnv(b *testing.B) loadSettings {
	round, err := time.ParseDuration(envOr(envDataPlaneRound, "300ms"))
	if err != nil {
		b.Fatalf("%s: %v", envDataPlaneRound, err)
	}
	return loadSettings{round: round, rounds: envInt(b, envDataPlaneRounds, 1), conc: envInt(b, envDataPlaneConcurrency, 8)}
}

// side is one Envoy under test and what the load generator measured through it.
type side struct {
	name string
	port uint32
	load loadResult
}

// compareSides warms both Envoys up, runs the rounds alternately and reports each
// side's figures under its name, and the ratios of the first side to the second.
func compareSides(b *testing.B, sides []side, s loadSettings) {
	for i := range sides {
		runLoad(b, sides[i].port, s, min(s.round, time.Second)) // warm-up, not counted
		sides[i].load = loadResult{}
	}
	var ratios []float64
	for r := range s.rounds {
		var perRound [2]loadResult
		for k := range sides {
			i := (k + r) % len(sides) // swap who goes first every round
			perRound[i] = runLoad(b, sides[i].port, s, s.round)
			sides[i].load.add(perRound[i])
		}
		ratios = append(ratios, perRound[0].rps()/perRound[1].rps())
	}
	first, second := sides[0].load, sides[1].load
	for _, sd := range sides {
		b.ReportMetric(sd.load.rps(), "rps-"+sd.name)
		b.ReportMetric(ms(sd.load.p99()), "p99-ms-"+sd.name)
	}
	b.ReportMetric(first.rps()/second.rps(), "rps-ratio")
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "rps-ratio-median-round")
	b.ReportMetric(ratios[0], "rps-ratio-worst-round")
	b.ReportMetric(float64(first.p99())/float64(second.p99()), "p99-ratio")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// loadResult is what one or more load runs measured.
type loadResult struct {
	requests  int
	elapsed   time.Duration
	latencies []time.Duration
}

func (l *loadResult) add(o loadResult) {
	l.requests += o.requests
	l.elapsed += o.elapsed
	l.latencies = append(l.latencies, o.latencies...)
}

func (l loadResult) rps() float64 { return float64(l.requests) / l.elapsed.Seconds() }

func (l loadResult) p99() time.Duration {
	sorted := slices.Clone(l.latencies)
	slices.Sort(sorted)
	return percentile(sorted, 99)
}

// runLoad sends GET requests for upstreamHost to the Envoy listener from s.conc
// workers for d, on keep-alive connections unless s says otherwise, and fails on any
// answer but 200.
func runLoad(b *testing.B, port uint32, s loadSettings, d time.Duration) loadResult {
	conc := s.conc
	transport := &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc, DisableCompression: true, DisableKeepAlives: s.newConnections}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	perWorker := make([][]time.Duration, conc)
	errs := make([]error, conc)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if errs[w] = fetch(client, url); errs[w] != nil {
					return
				}
				perWorker[w] = append(perWorker[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	out := loadResult{elapsed: time.Since(start)}
	for w := range conc {
		if errs[w] != nil {
			b.Fatalf("through the Envoy on port %d: %v", port, errs[w])
		}
		out.requests += len(perWorker[w])
		out.latencies = append(out.latencies, perWorker[w]...)
	}
	return out
}

func fetch(client *http.Client, url string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Host = upstreamHost
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// upstream is the local HTTPS server both Envoys send to. It answers every request with
// a short body and records nothing, so that it costs the same throughout a long run.
type upstream struct {
	port   uint32
	caPEM  []byte
	caFile string
}

func startUpstream(b *testing.B) upstream {
	ca := testpki.NewCA(b, "bench upstream CA")
	cert := ca.Issue(b, testpki.Options{CommonName: upstreamHost, DNSNames: []string{upstreamHost}})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.ServeTLS(lis, "", "") }()
	b.Cleanup(func() { _ = srv.Close() })
	caFile := filepath.Join(b.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		b.Fatal(err)
	}
	return upstream{port: uint32(lis.Addr().(*net.TCPAddr).Port), caPEM: ca.CertPEM, caFile: caFile}
}

// The crowd around the load generator on the data path: other tenants, each with a
// Backend and HTTPRoute of its own, and their pods, so that the filter chain matcher,
// the chains, the route tables and the caller identity lookups have a realistic size.
const (
	dataPlaneTenants = 100
	dataPlaneCallers = 1000
)

// startGenerated translates dataPlaneResources, publishes the result over xDS to an
// Envoy and returns the port of its listener once the load generator's route answers.
func startGenerated(b *testing.B, up upstream, isolated bool) uint32 {
	port := xdstest.FreePort(b)
	res, addrs := dataPlaneResources(b, up, int32(port), isolated)
	result := translate.Translate(res, addrs, translate.Options{Now: time.Now()})
	if len(result.Gateways) != 1 {
		b.Fatalf("translation produced %d Gateways; statuses: %+v", len(result.Gateways), result.Statuses.Gateways)
	}
	gw := result.Gateways[0]
	if gw.Listeners[0].Isolated != isolated {
		b.Fatalf("listener isolated = %v, want %v", gw.Listeners[0].Isolated, isolated)
	}
	out, err := envoyconfig.Build(gw, envoyconfig.Options{})
	if err != nil {
		b.Fatal(err)
	}
	server, _ := startEnvoyOverADS(b, gw.Name, fmt.Sprintf("bench-isolated-%v", isolated))
	if _, _, err := server.Publish(gw.Name, out); err != nil {
		b.Fatal(err)
	}
	listener := translate.EnvoyPort(gwapiv1.PortNumber(port))
	waitAnswers(b, listener)
	return listener
}

// dataPlaneResources is one Gateway, isolating tenants or not, with the load
// generator's Backend (HTTPS to the upstream, verified against its CA) and HTTPRoute in
// appsNS, the load generator itself as a pod of appsNS on 127.0.0.1, and the crowd.
func dataPlaneResources(b *testing.B, up upstream, port int32, isolated bool) (*egress.Resources, egress.Addresses) {
	w := workload{gateways: 1, perGateway: dataPlaneTenants, namespaces: dataPlaneTenants, pods: dataPlaneCallers, listenerPort: port}
	res, addrs := w.resources(distinctPairs(b, 2*w.total()))
	if !isolated {
		res.Gateways[0].Annotations = map[string]string{translate.TenantIsolationAnnotation: "off"}
	}
	be := backend("upstream", upstreamHost)
	be.Spec.Destination.FQDN.TLS.ClientCertificate, be.Spec.Destination.Ports[0].Port = nil, int32(up.port)
	rt := route("upstream", gatewayName(0), upstreamHost)
	upstreamPort := gwapiv1.PortNumber(up.port)
	rt.Spec.Rules[0].BackendRefs[0].Port = &upstreamPort
	res.Backends, res.HTTPRoutes = append(res.Backends, &be), append(res.HTTPRoutes, &rt)
	res.Secrets = append(res.Secrets, corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: caSecretName("upstream"), Namespace: appsNS}, Data: map[string][]byte{"ca.crt": up.caPEM}})
	res.Pods = append(res.Pods, callerPod(appsNS, "load-generator", loopback))
	addrs[upstreamHost] = resolvedTo(loopback)
	return res, addrs
}

// startEnvoyOverADS serves xDS and starts an Envoy of the gateway that fetches its
// configuration from it; both run until the benchmark ends.
func startEnvoyOverADS(b *testing.B, gateway, node string) (*xds.Server, *xdstest.Envoy) {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	server := xds.New(logr.Discard())
	xdsPort := serveXDS(b, ctx, server)
	envoy := xdstest.Start(b, xdstest.Config{Bootstrap: func(admin uint32) ([]byte, error) {
		return bootstrap.YAML(bootstrap.Options{Gateway: gateway, NodeID: node, XDSAddress: "127.0.0.1", XDSPort: xdsPort, AdminPort: admin})
	}})
	return server, envoy
}

// startMinimal runs an Envoy from the hand-written bootstrap and returns the port of its
// listener once it answers.
func startMinimal(b *testing.B, up upstream) uint32 {
	tmpl, err := template.ParseFiles(filepath.Join("testdata", "minimal-envoy.yaml.tmpl"))
	if err != nil {
		b.Fatal(err)
	}
	listener := xdstest.FreePort(b)
	xdstest.Start(b, xdstest.Config{Bootstrap: func(admin uint32) ([]byte, error) {
		var buf bytes.Buffer
		err := tmpl.Execute(&buf, map[string]any{"AdminPort": admin, "ListenerPort": listener, "UpstreamPort": up.port, "Host": upstreamHost, "CAFile": up.caFile})
		return buf.Bytes(), err
	}})
	waitAnswers(b, listener)
	return listener
}

// waitAnswers waits until a request through the listener gets 200 from the upstream.
func waitAnswers(b *testing.B, port uint32) {
	client := &http.Client{Timeout: 2 * time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	xdstest.WaitFor(b, xdstest.Timeout, "a 200 through the Envoy on port "+fmt.Sprint(port), func() error {
		return fetch(client, url)
	})
}
