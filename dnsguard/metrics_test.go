package dnsguard

import (
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
)

func newTestRegistry(t *testing.T) *prometheus.Registry {
	t.Helper()
	return prometheus.NewRegistry()
}

// family returns the gathered metric family called name, or nil.
func family(t *testing.T, reg *prometheus.Registry, name string) *dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	f := family(t, reg, name)
	if f == nil || len(f.Metric) != 1 {
		t.Fatalf("metric %s not found", name)
	}
	return f.Metric[0].GetGauge().GetValue()
}

// counters returns a labelled counter's values by the value of label.
func counters(t *testing.T, reg *prometheus.Registry, name, label string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	f := family(t, reg, name)
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == label {
				out[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func TestMetrics(t *testing.T) {
	srv := dnstest.NewServer(t)
	srv.Set("mixed.example.com", "mixed.example.com. 60 IN A 93.184.216.34", "mixed.example.com. 60 IN A 10.0.0.1",
		"mixed.example.com. 60 IN A 169.254.169.254", "mixed.example.com. 60 IN A 10.96.0.1")
	srv.Script("tc.example.com", dnstest.Response{Truncate: true, Answer: []string{"tc.example.com. 60 IN A 93.184.216.34"}})
	srv.Script("sf.example.com", dnstest.Response{Rcode: dns.RcodeServerFailure})
	reg := newTestRegistry(t)
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(srv.Addr())
	cfg.IPFamily = IPv4
	r, err := NewResolver(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"mixed.example.com", "tc.example.com", "sf.example.com", "missing.example.com", "x.svc"} {
		resolve(t, r, n)
	}
	wantQueries := map[string]float64{QueryNoError: 2, QueryTruncated: 1, QueryServFail: 1, QueryNXDomain: 1}
	if got := counters(t, reg, "portcullis_dns_queries_total", "result"); !mapsEqual(got, wantQueries) {
		t.Errorf("queries = %v, want %v", got, wantQueries)
	}
	wantBlocked := map[string]float64{CategoryPrivate: 1, CategoryMetadata: 1, CategoryClusterCIDR: 1}
	if got := counters(t, reg, "portcullis_dns_blocked_answers_total", "reason"); !mapsEqual(got, wantBlocked) {
		t.Errorf("blocked = %v, want %v", got, wantBlocked)
	}
	h := family(t, reg, "portcullis_dns_resolution_duration_seconds")
	if h == nil || h.Metric[0].GetHistogram().GetSampleCount() != 4 {
		t.Errorf("resolution histogram = %v, want 4 samples (the refused name is not resolved)", h)
	}

	again, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("registering twice: %v", err)
	}
	again.query(QueryTimeout)
	if got := counters(t, reg, "portcullis_dns_queries_total", "result")[QueryTimeout]; got != 1 {
		t.Errorf("a second NewMetrics on the same registry does not share the collectors")
	}
	var nilMetrics *Metrics
	nilMetrics.query(QueryTimeout)
	nilMetrics.blockedAnswer(CategoryPrivate)
	nilMetrics.setTracked(3)
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
