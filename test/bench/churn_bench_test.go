package bench

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// envChurnRate is the number of pod events per second of BenchmarkPodChurn (default 100).
const envChurnRate = "BENCH_CHURN_RATE"

// BenchmarkPodChurn starts and deletes pods at a steady rate among those of a tenancy
// workload and times each event until a real Envoy, connected over ADS, acknowledges a
// configuration that holds it (routes a new pod, no longer knows a deleted one). The
// events go through the manager's pod path (controllers/callers.go), in-process: the
// callers are recomputed from the pods' claims, the IR last published gets them
// (translate.WithCallers), is built and published; events arriving meanwhile coalesce
// into the next round, as the controller's single work item does. No translation runs,
// which it shows by reporting one round's time next to a full translation's. Each
// iteration is one event; run it with -benchtime=<events>x.
func BenchmarkPodChurn(b *testing.B) {
	rate := envInt(b, envChurnRate, 100)
	for _, w := range tenancy(b) {
		b.Run(fmt.Sprintf("%s/rate=%d", w, rate), func(b *testing.B) {
			c := startChurn(b, w)
			interval := time.Second / time.Duration(rate)
			before := c.envoyStats(b)
			cpu := startCPU(b)
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
				c.event(i)
			}
			c.waitAcked(b)
			c.report(b, cpuTime(b)-cpu.start)
			c.reportEnvoy(b, before)
		})
	}
}

// churn is the manager's pod path with its state: the pods its cache holds, the IR it
// last published, and what happened to every event.
type churn struct {
	w       workload
	gateway string
	base    ir.Gateway
	server  *xds.Server
	envoy   *xdstest.Envoy
	builds  *envoyconfig.Cache
	wake    chan struct{}
	// fullCold and fullWarm are full translations and builds of the workload: cold, as
	// at start, and warm with one pod more, as a pod event would cost if it translated.
	fullCold, fullWarm time.Duration

	mu sync.Mutex
	// claims are the pods' caller claims, oldest first, as the manager's pod index
	// (controllers/pod_index.go) keeps them from its events.
	claims   []translate.CallerClaim
	happened []time.Time // when event i changed the pods
	// routed is when Envoy acknowledged listeners and route tables holding each event;
	// snapshot when it acknowledged every resource type of such a version.
	routed, snapshot ackLog
	// holds is, per published version, how many events (the first ones) it holds.
	holds            map[string]int
	rebuilds, pushes []time.Duration
}

// ackLog is when each event was acknowledged; events are acknowledged in order.
type ackLog struct {
	at   []time.Time
	upTo int
}

func (l *ackLog) mark(held int, at time.Time) {
	for ; l.upTo < held; l.upTo++ {
		l.at[l.upTo] = at
	}
}

// startChurn translates the workload, publishes it to a new Envoy, waits until Envoy
// runs it and starts the pod worker and the ACK watcher.
func startChurn(b *testing.B, w workload) *churn {
	w.listenerPort = int32(xdstest.FreePort(b))
	res, addrs := w.resources(distinctPairs(b, 2*w.total()))
	c := &churn{w: w, claims: claimsOf(res.Pods), builds: envoyconfig.NewCache(), wake: make(chan struct{}, 1), holds: map[string]int{}}
	out := c.translate(b, res, addrs)
	c.server, c.envoy = startEnvoyOverADS(b, c.gateway, "bench-churn")
	version, _, err := c.server.Publish(c.gateway, out)
	if err != nil {
		b.Fatal(err)
	}
	c.holds[version] = 0
	xdstest.WaitFor(b, 15*time.Minute, "Envoy to run the initial configuration", func() error {
		if ok, _, msg := c.server.Status(c.gateway).Programmed(); !ok {
			return fmt.Errorf("%s", msg)
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go c.work(ctx, b, translate.Callers(res.Pods, nil))
	go c.watchAcks(ctx)
	return c
}

// translate is the full translation the manager makes before the first pod event,
// timed cold; it keeps the IR and returns the built resources. It then times the
// translation a pod event would cost if it translated: warm caches, one pod more.
func (c *churn) translate(b *testing.B, res *egress.Resources, addrs egress.Addresses) envoyconfig.Resources {
	opts := translateOptions(b)
	opts.Cache = translate.NewCache()
	var out envoyconfig.Resources
	c.fullCold, out = c.fullTranslation(b, res, addrs, opts)
	onePodMore := *res
	onePodMore.Pods = append(slices.Clip(res.Pods), callerPod(c.w.namespaceOf(0), "pod-probe", netip.MustParseAddr("10.255.255.254")))
	c.fullWarm, _ = c.fullTranslation(b, &onePodMore, addrs, opts)
	return out
}

// fullTranslation translates and builds, keeps the IR of the first Gateway it sees and
// returns the time it took with the built resources.
func (c *churn) fullTranslation(b *testing.B, res *egress.Resources, addrs egress.Addresses, opts translate.Options) (time.Duration, envoyconfig.Resources) {
	start := time.Now()
	result := translate.Translate(res, addrs, opts)
	if len(result.Gateways) != 1 || !result.Gateways[0].Listeners[0].Isolated {
		b.Fatalf("want one isolated Gateway, got %d; statuses: %+v", len(result.Gateways), result.Statuses.Gateways)
	}
	out, err := c.builds.Build(result.Gateways[0], envoyconfig.Options{})
	if err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	if c.gateway == "" {
		c.base, c.gateway = result.Gateways[0], result.Gateways[0].Name
	}
	return took, out
}

// event applies pod event i to the index: even ones start a new pod (a new address in
// the next namespace), odd ones delete the oldest pod.
func (c *churn) event(i int) {
	c.mu.Lock()
	if i%2 == 0 {
		k := c.w.pods + i/2
		p := callerPod(c.w.namespaceOf(k), fmt.Sprintf("pod-%d", k), podIP(k))
		c.claims = append(c.claims, claimsOf([]corev1.Pod{p})...)
	} else {
		c.claims = c.claims[1:]
	}
	c.happened = append(c.happened, time.Now())
	c.routed.at, c.snapshot.at = append(c.routed.at, time.Time{}), append(c.snapshot.at, time.Time{})
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // a round is pending already: it will hold this event
	}
}

// work is reconcileCallers: recompute the callers from the claims, and when they
// changed rebuild the last published IR with them and publish.
func (c *churn) work(ctx context.Context, b *testing.B, callers []ir.Caller) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		start := time.Now()
		next, events := c.callers()
		if slices.Equal(next, callers) {
			continue
		}
		callers = next
		out, err := c.builds.Build(translate.WithCallers(c.base, callers), envoyconfig.Options{})
		built := time.Now()
		var version string
		if err == nil {
			version, _, err = c.server.Publish(c.gateway, out)
		}
		if err != nil {
			b.Errorf("republish with new callers: %v", err)
			return
		}
		c.mu.Lock()
		c.holds[version] = events
		c.rebuilds, c.pushes = append(c.rebuilds, built.Sub(start)), append(c.pushes, time.Since(built))
		c.mu.Unlock()
	}
}

// callers is the caller table of the claims, computed under the lock as the pod
// index computes it, and how many events it holds.
func (c *churn) callers() ([]ir.Caller, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return translate.CallersOf(slices.Values(c.claims), nil), len(c.happened)
}

// claimsOf is the caller claim of each pod that has one.
func claimsOf(pods []corev1.Pod) []translate.CallerClaim {
	var out []translate.CallerClaim
	for i := range pods {
		if claim, ok := translate.ClaimOf(&pods[i]); ok {
			out = append(out, claim)
		}
	}
	return out
}

// watchAcks marks events acknowledged whenever the xDS server says Envoy's state
// changed.
func (c *churn) watchAcks(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-c.server.Changes():
			if name == c.gateway {
				c.ack(c.server.Status(c.gateway), time.Now())
			}
		}
	}
}

// ack marks the events that the versions Envoy runs all hold: of listeners and route
// tables for routed, of every type for snapshot.
func (c *churn) ack(st xds.GatewayStatus, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var routing []string
	for _, e := range st.Envoys {
		routing = append(routing, e.Types[resource.ListenerType].Acked, e.Types[resource.RouteType].Acked)
	}
	c.routed.mark(c.heldByAll(routing), at)
	if versions, all := st.Running(); all {
		c.snapshot.mark(c.heldByAll(versions), at)
	}
}

// heldByAll is the number of events every version holds; 0 for no version or one
// this benchmark did not publish. c.mu must be held.
func (c *churn) heldByAll(versions []string) int {
	if len(versions) == 0 {
		return 0
	}
	held := len(c.happened)
	for _, v := range versions {
		n, ok := c.holds[v]
		if !ok {
			return 0
		}
		held = min(held, n)
	}
	return held
}

// waitAcked waits until Envoy acknowledged every event.
func (c *churn) waitAcked(b *testing.B) {
	xdstest.WaitFor(b, 10*time.Minute, "Envoy to acknowledge every pod event", func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.snapshot.upTo < len(c.happened) {
			return fmt.Errorf("%d of %d events acknowledged", c.snapshot.upTo, len(c.happened))
		}
		return nil
	})
}

// report gives the percentiles of event to ACK, the time from the last event until
// Envoy ran the final state, and one round of the pod path next to a full translation.
func (c *churn) report(b *testing.B, cpu time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range []struct {
		name string
		log  ackLog
	}{{"routed", c.routed}, {"ack", c.snapshot}} {
		took := make([]time.Duration, len(c.happened))
		for i := range took {
			took[i] = l.log.at[i].Sub(c.happened[i])
		}
		settle := took[len(took)-1]
		slices.Sort(took)
		b.ReportMetric(ms(percentile(took, 50)), l.name+"-p50-ms")
		b.ReportMetric(ms(percentile(took, 99)), l.name+"-p99-ms")
		b.ReportMetric(ms(took[len(took)-1]), l.name+"-max-ms")
		b.ReportMetric(ms(settle), l.name+"-settle-ms")
	}
	for name, ds := range map[string][]time.Duration{"build": c.rebuilds, "publish": c.pushes} {
		sorted := slices.Sorted(slices.Values(ds))
		b.ReportMetric(ms(percentile(sorted, 50)), name+"-p50-ms")
		b.ReportMetric(ms(percentile(sorted, 99)), name+"-p99-ms")
	}
	b.ReportMetric(ms(c.fullCold), "full-cold-ms")
	b.ReportMetric(ms(c.fullWarm), "full-warm-ms")
	b.ReportMetric(float64(len(c.pushes)), "publishes")
	b.ReportMetric(ms(cpu)/float64(max(len(c.pushes), 1)), "cpu-ms/publish")
	if n := len(c.happened); n > 1 {
		b.ReportMetric(float64(n-1)/c.happened[n-1].Sub(c.happened[0]).Seconds(), "events/s")
	}
}

// envoyUpdateStats count the configuration updates Envoy applied: clusters and
// listeners it accepted, and listeners it updated in place (only the filter chains
// changed: connections stay) rather than replacing them (the old one drains).
var envoyUpdateStats = []struct{ stat, unit string }{
	{"cluster_manager.cds.update_success", "cds-updates"},
	{"listener_manager.lds.update_success", "lds-updates"},
	{"listener_manager.listener_modified", "listeners-modified"},
	{"listener_manager.listener_in_place_updated", "listeners-updated-in-place"},
}

func (c *churn) envoyStats(b *testing.B) []uint64 {
	out := make([]uint64, len(envoyUpdateStats))
	for i, s := range envoyUpdateStats {
		n, err := c.envoy.Stat(s.stat)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = n
	}
	return out
}

// reportEnvoy reports how many updates of each kind Envoy applied during the churn,
// and its peak resident set.
func (c *churn) reportEnvoy(b *testing.B, before []uint64) {
	for i, n := range c.envoyStats(b) {
		b.ReportMetric(float64(n-before[i]), envoyUpdateStats[i].unit)
	}
	b.ReportMetric(float64(procStatusKiB(strconv.Itoa(c.envoy.PID()), "VmHWM"))/1024, "envoy-peak-rss-MiB")
}
