package dnsguard

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The result label values of portcullis_dns_queries_total: one per DNS exchange with one
// server over one transport.
const (
	QueryNoError   = "noerror"
	QueryNXDomain  = "nxdomain"
	QueryServFail  = "servfail"
	QueryRefused   = "refused"
	QueryRcode     = "other-rcode"
	QueryTruncated = "truncated"
	QueryTimeout   = "timeout"
	QueryNetwork   = "network-error"
	QueryMalformed = "malformed"
)

// Metrics are the guard's Prometheus metrics. A nil *Metrics records nothing.
type Metrics struct {
	queries  *prometheus.CounterVec
	blocked  *prometheus.CounterVec
	duration prometheus.Histogram
	tracked  prometheus.Gauge
}

// NewMetrics creates the metrics and registers them on reg; pass controller-runtime's
// metrics.Registry in the manager and a fresh prometheus.NewRegistry() in tests.
// Registering twice on the same registry reuses the collectors already there.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_dns_queries_total",
			Help: "DNS queries sent by the DNS guard, by result (noerror, nxdomain, servfail, refused, other-rcode, truncated, timeout, network-error, malformed).",
		}, []string{"result"}),
		blocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_dns_blocked_answers_total",
			Help: "Answers refused by the DNS guard's address policy, by reason category.",
		}, []string{"reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "portcullis_dns_resolution_duration_seconds",
			Help:    "Time to resolve one name (every family, CNAME hop, retry and server).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		tracked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "portcullis_dns_names_tracked",
			Help: "Names the DNS guard keeps resolved.",
		}),
	}
	var err error
	m.queries = register(reg, m.queries, &err)
	m.blocked = register(reg, m.blocked, &err)
	m.duration = register(reg, m.duration, &err)
	m.tracked = register(reg, m.tracked, &err)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// NewDefaultMetrics registers the metrics on controller-runtime's registry, which the
// manager's metrics endpoint serves.
func NewDefaultMetrics() (*Metrics, error) {
	return NewMetrics(ctrlmetrics.Registry)
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		*errp = errors.Join(*errp, err)
	}
	return c
}

func (m *Metrics) query(result string) {
	if m != nil {
		m.queries.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) blockedAnswer(category string) {
	if m != nil {
		m.blocked.WithLabelValues(category).Inc()
	}
}

func (m *Metrics) resolution(d time.Duration) {
	if m != nil {
		m.duration.Observe(d.Seconds())
	}
}

func (m *Metrics) setTracked(n int) {
	if m != nil {
		m.tracked.Set(float64(n))
	}
}
