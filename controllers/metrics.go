package controllers

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// Metric names of the operator (the DNS guard has its own, portcullis_dns_*).
const (
	metricReconcileDuration = "portcullis_translation_duration_seconds"
	metricGatewayProgrammed = "portcullis_gateway_programmed"
	metricEnvoysConnected   = "portcullis_xds_connected_envoys"
	metricBackends          = "portcullis_backends"
	metricReconciles        = "portcullis_reconciles_total"
	metricStatusYields      = "portcullis_status_write_yields_total"
	metricStatusDeferred    = "portcullis_status_writes_deferred"
	metricIdleCollections   = "portcullis_idle_collections_total"
)

// operatorMetrics answers a scrape from the reconciler's latest state: what Envoy runs is
// read from the xDS server then, so a gauge is never stale and a deleted Gateway's series
// simply disappear.
type operatorMetrics struct {
	r        *Reconciler
	duration prometheus.Histogram
	// reconciles counts reconciles by whether they translated or reused the last
	// translation (translation_reuse.go).
	reconciles *prometheus.CounterVec
	// yields counts status writes cut short for a newer reconcile (status_yield.go).
	yields prometheus.Counter

	programmed, connected, backends, deferred *prometheus.Desc

	mu sync.Mutex
	// backendConditions counts Backends by condition type and status, from the last
	// translation.
	backendConditions map[[2]string]int
}

func newOperatorMetrics(r *Reconciler) *operatorMetrics {
	return &operatorMetrics{
		r: r,
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    metricReconcileDuration,
			Help:    "Time of one reconcile: gather, translate, build and publish every Gateway, write statuses.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricReconciles,
			Help: "Reconciles, by how they came by their translation: translated in full, a delta of the last one (only Backend specs changed), the last one reused (no input changed since), or none (unchanged: woken only by input the last reconcile had read, it returned at once).",
		}, []string{"translation"}),
		yields: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricStatusYields,
			Help: "Status writes that stopped early because newer input woke the reconciler; the next reconcile writes the rest from its newer statuses.",
		}),
		programmed: prometheus.NewDesc(metricGatewayProgrammed,
			"1 when every connected Envoy of the Gateway acknowledged its published configuration, else 0.", []string{"gateway"}, nil),
		connected: prometheus.NewDesc(metricEnvoysConnected,
			"Envoys of the Gateway connected to the xDS server now.", []string{"gateway"}, nil),
		backends: prometheus.NewDesc(metricBackends,
			"Backends by condition type and status, from the last translation.", []string{"condition", "status"}, nil),
		deferred: prometheus.NewDesc(metricStatusDeferred,
			"Objects the last status write left unchecked for the next reconcile because it yielded to newer input (most need a write: what it drops first are Backends and routes translation changed); 0 when it checked every status translation gave.", nil, nil),
	}
}

// Describe sends the descriptors of every metric.
func (m *operatorMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.duration.Describe(ch)
	m.reconciles.Describe(ch)
	m.yields.Describe(ch)
	m.r.idle.count.Describe(ch)
	ch <- m.programmed
	ch <- m.connected
	ch <- m.backends
	ch <- m.deferred
}

// Collect reads the current state.
func (m *operatorMetrics) Collect(ch chan<- prometheus.Metric) {
	m.duration.Collect(ch)
	m.reconciles.Collect(ch)
	m.yields.Collect(ch)
	m.r.idle.count.Collect(ch)
	ch <- prometheus.MustNewConstMetric(m.deferred, prometheus.GaugeValue, float64(m.r.status.deferred.Load()))
	for _, gw := range m.r.liveGateways() {
		st := m.r.opts.XDS.Status(gw)
		ok, _, _ := st.Programmed()
		ch <- prometheus.MustNewConstMetric(m.programmed, prometheus.GaugeValue, boolFloat(ok), gw)
		ch <- prometheus.MustNewConstMetric(m.connected, prometheus.GaugeValue, float64(len(st.Envoys)), gw)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, n := range m.backendConditions {
		ch <- prometheus.MustNewConstMetric(m.backends, prometheus.GaugeValue, float64(n), key[0], key[1])
	}
}

// unchanged counts a reconcile that returned at once: nothing new had come since the
// last one (nothing_new.go).
func (m *operatorMetrics) unchanged() {
	if m != nil {
		m.reconciles.WithLabelValues(translationNone).Inc()
	}
}

// statusWriteYielded counts a status write that yielded.
func (m *operatorMetrics) statusWriteYielded() {
	if m != nil {
		m.yields.Inc()
	}
}

// observe records one reconcile.
func (m *operatorMetrics) observe(took time.Duration, how string, backends map[string]*egressv1alpha1.BackendStatus) {
	if m == nil {
		return
	}
	m.duration.Observe(took.Seconds())
	m.reconciles.WithLabelValues(how).Inc()
	counts := countConditions(backends)
	// Keep a zero for pairs seen before, so "no Backend is failing" is a 0, not a gap.
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.backendConditions {
		if _, ok := counts[key]; !ok {
			counts[key] = 0
		}
	}
	m.backendConditions = counts
}

// countConditions counts the Backends by condition type and status. The pairs are a
// handful (three types, two or three statuses), so they are counted in a short slice
// searched in order, the condition's strings mostly the very constants the pairs hold:
// hashing two strings per condition into a map took some 4.7 ms a reconcile at 10,000
// Backends (profile of BenchmarkManagerOneBackendChanged, 2026-12-02), the slice a
// fraction of it (BenchmarkCountBackendConditions).
func countConditions(backends map[string]*egressv1alpha1.BackendStatus) map[[2]string]int {
	type pair struct {
		typ    string
		status metav1.ConditionStatus
		n      int
	}
	var pairs []pair
	for _, st := range backends {
	conditions:
		for _, c := range st.Conditions {
			for i := range pairs {
				if pairs[i].typ == c.Type && pairs[i].status == c.Status {
					pairs[i].n++
					continue conditions
				}
			}
			pairs = append(pairs, pair{typ: c.Type, status: c.Status, n: 1})
		}
	}
	counts := make(map[[2]string]int, len(pairs))
	for _, p := range pairs {
		counts[[2]string{p.typ, string(p.status)}] = p.n
	}
	return counts
}

// liveGateways are the Gateways published by the last reconcile.
func (r *Reconciler) liveGateways() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.live))
	for key := range r.live {
		out = append(out, key)
	}
	slices.Sort(out)
	return out
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
