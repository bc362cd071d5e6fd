package e2e

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// The Backends of the metrics test: one with a dot in its name in front of a working
// upstream, one whose port nothing listens on. Their envoy_cluster_name labels are the
// cluster names with "_" for ".".
const (
	upCluster   = "backend/apps/api_v1/http"
	downCluster = "backend/apps/down/http"
)

// plainBackend is the destination of a plaintext FQDN Backend (featureBackendYAML's .Extra).
func plainBackend(host string, port uint32) string {
	return fmt.Sprintf(`  destination:
    type: FQDN
    fqdn: {hostname: %s}
    ports: [{name: http, port: %d, protocol: HTTP}]`, host, port)
}

// scrape is one parsed answer of the metrics listener.
type scrape map[string]*dto.MetricFamily

// TestPerBackendMetrics sends traffic through Envoy to two Backends, scrapes the metrics
// listener as Prometheus would, and checks what the README and the dashboard promise.
func TestPerBackendMetrics(t *testing.T) {
	up := testupstream.Start(t, testupstream.Options{Name: "api"})
	d := startDataPath(t)
	upScenario := scenario{Port: d.port, Name: "api.v1", Host: "api.e2e.test", Extra: plainBackend("api.e2e.test", up.Port())}
	downScenario := scenario{Port: d.port, Name: "down", Host: "down.e2e.test", Extra: plainBackend("down.e2e.test", xdstest.FreePort(t))}
	d.apply(gatewayYAML+routeYAML+featureBackendYAML+renderTo(t, routeYAML+featureBackendYAML, downScenario), upScenario,
		resolved("api.e2e.test", "127.0.0.1", "down.e2e.test", "127.0.0.1"))
	d.eventually(http.StatusOK, "api.e2e.test", "/")
	for range 4 {
		if code, _, _ := d.get("api.e2e.test", "/"); code != http.StatusOK {
			t.Fatalf("api.e2e.test answered %d", code)
		}
		if code, _, _ := d.get("down.e2e.test", "/"); code != http.StatusServiceUnavailable {
			t.Fatalf("down.e2e.test answered %d, want 503 (nothing listens there)", code)
		}
	}
	s := d.scrapeLatencies(upCluster)

	t.Run("the Backend's counters are there under its stat name, nonzero", func(t *testing.T) {
		for _, c := range []struct{ metric, class string }{
			{"envoy_cluster_upstream_rq_total", ""},
			{"envoy_cluster_upstream_rq_completed", ""},
			{"envoy_cluster_upstream_rq_xx", "2"},
		} {
			if v := s.counter(t, c.metric, upCluster, c.class); v < 4 {
				t.Errorf("%s{envoy_cluster_name=%q} = %v, want at least 4", c.metric, upCluster, v)
			}
		}
	})
	t.Run("a dot in the Backend's name does not split the cluster name", func(t *testing.T) {
		for name, mf := range s {
			for _, m := range mf.GetMetric() {
				if v := label(m, "envoy_cluster_name"); strings.HasPrefix(v, "backend/apps/api") && v != upCluster {
					t.Errorf("%s has envoy_cluster_name %q", name, v)
				}
			}
			if strings.Contains(name, "v1_http") {
				t.Errorf("metric %s holds a piece of a cluster name", name)
			}
		}
	})
	t.Run("a connection failure is one 503, counted by rq_xx and rq_completed but not rq_total", func(t *testing.T) {
		fails := s.counter(t, "envoy_cluster_upstream_cx_connect_fail", downCluster, "")
		fivexx := s.counter(t, "envoy_cluster_upstream_rq_xx", downCluster, "5")
		completed := s.counter(t, "envoy_cluster_upstream_rq_completed", downCluster, "")
		total := s.counter(t, "envoy_cluster_upstream_rq_total", downCluster, "")
		if fails < 4 || fivexx != fails || completed != fails || total != 0 {
			t.Errorf("connect failures %v, 5xx %v, completed %v, total %v; want 5xx = completed = connect failures >= 4 and total 0",
				fails, fivexx, completed, total)
		}
	})
	t.Run("the dashboard's queries read only metrics the scrape has, and select the Backend", func(t *testing.T) {
		checkDashboardAgainst(t, loadDashboard(t), s)
	})
	t.Run("the metrics port serves nothing else of the admin interface", func(t *testing.T) {
		checkOnlyStatsServed(t, d)
	})
}

// scrapeLatencies scrapes until cluster's latency histogram has samples: Envoy merges
// histograms into what the admin interface shows once per stats flush (5 s).
func (d *dataPath) scrapeLatencies(cluster string) scrape {
	d.t.Helper()
	var s scrape
	xdstest.WaitFor(d.t, 3*5*time.Second, "a latency sample of "+cluster, func() error {
		var err error
		if s, err = d.scrape(); err != nil {
			return xdstest.Permanent(err)
		}
		for _, m := range s["envoy_cluster_upstream_rq_time"].GetMetric() {
			if label(m, "envoy_cluster_name") == cluster && m.GetHistogram().GetSampleCount() > 0 {
				return nil
			}
		}
		return fmt.Errorf("no sample yet")
	})
	return s
}

// scrape GETs the metrics listener as Prometheus does and parses the text format.
func (d *dataPath) scrape() (scrape, error) {
	code, body, err := d.metricsRequest(http.MethodGet, bootstrap.MetricsPath)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %d", bootstrap.MetricsPath, code)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("the scrape is not in Prometheus text format: %w", err)
	}
	return families, nil
}

// metricsRequest sends one request to the metrics listener; path is sent as is.
func (d *dataPath) metricsRequest(method, path string) (int, string, error) {
	req, err := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d/", d.metricsPort), nil)
	if err != nil {
		return 0, "", err
	}
	req.URL.Opaque = path // keeps "..", "//" and the case: what a hostile client sends
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// counter is the value of a counter of one cluster (and, when class is set, one
// response code class); the test fails when the series is missing.
func (s scrape) counter(t *testing.T, metric, cluster, class string) float64 {
	t.Helper()
	for _, m := range s[metric].GetMetric() {
		if label(m, "envoy_cluster_name") == cluster && label(m, "envoy_response_code_class") == class {
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("the scrape has no %s{envoy_cluster_name=%q, envoy_response_code_class=%q}", metric, cluster, class)
	return 0
}

// series are the names of every series in the scrape; a histogram's are
// <name>_bucket, _sum and _count.
func (s scrape) series() map[string]bool {
	out := map[string]bool{}
	for name, mf := range s {
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
			continue
		}
		out[name] = true
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// checkDashboardAgainst checks every query of the dashboard against a real scrape: its
// metrics exist, its envoy_cluster_name matchers select the up Backend (alone when the
// variables name it), label_replace makes <namespace>/<name> of it, and the variables'
// regular expressions read namespace and name from it.
func checkDashboardAgainst(t *testing.T, d dashboard, s scrape) {
	t.Helper()
	have := s.series()
	for _, q := range append(d.panelQueries(), d.variableQueries()...) {
		names := metricNames(q)
		if len(names) == 0 {
			t.Errorf("no metric found in query %q", q)
		}
		for _, name := range names {
			if !have[name] {
				t.Errorf("query reads %s, which the scrape does not have:\n%s", name, q)
			}
		}
	}
	for _, q := range d.panelQueries() {
		checkClusterMatchers(t, q)
		for _, m := range backendLabel.FindAllStringSubmatch(q, -1) {
			if got := regexp.MustCompile("^(?:"+m[1]+")$").ReplaceAllString(upCluster, "$1"); got != "apps/api_v1" {
				t.Errorf("label_replace regex %q makes backend %q of %s, want apps/api_v1", m[1], got, upCluster)
			}
		}
	}
	for variable, want := range map[string]string{"namespace": "apps", "backend": "api_v1"} {
		if m := d.variableRegex(t, variable).FindStringSubmatch(upCluster); len(m) != 2 || m[1] != want {
			t.Errorf("variable %s reads %v of %s, want %q", variable, m, upCluster, want)
		}
	}
}

// checkClusterMatchers checks a query's envoy_cluster_name matchers (Prometheus anchors
// them) with the variables naming the up Backend, and with both at All (".+").
func checkClusterMatchers(t *testing.T, q string) {
	t.Helper()
	matchers := clusterMatcher.FindAllStringSubmatch(q, -1)
	if len(matchers) == 0 {
		t.Errorf("query selects no envoy_cluster_name: %q", q)
	}
	for _, m := range matchers {
		one := strings.NewReplacer("$namespace", "apps", "$backend", "api_v1").Replace(m[1])
		all := strings.NewReplacer("$namespace", ".+", "$backend", ".+").Replace(m[1])
		reOne, reAll := regexp.MustCompile("^(?:"+one+")$"), regexp.MustCompile("^(?:"+all+")$")
		if !reOne.MatchString(upCluster) || reOne.MatchString(downCluster) || !reAll.MatchString(downCluster) {
			t.Errorf("matcher %q: selecting api_v1 must match %s alone, All must match every Backend", m[1], upCluster)
		}
	}
}

// checkOnlyStatsServed asks the metrics listener for admin paths: only GET
// /stats/prometheus reaches the admin interface (its cluster counts the requests), every
// other one is a 404 of the listener, and Envoy runs on after POST /quitquitquit.
func checkOnlyStatsServed(t *testing.T, d *dataPath) {
	t.Helper()
	adminRequests := func() uint64 {
		n, err := d.envoy.Stat("cluster." + bootstrap.AdminClusterName + ".upstream_rq_total")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := adminRequests()
	allowed := 0
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/stats/prometheus", http.StatusOK},
		{http.MethodGet, "/stats/prometheus?usedonly", http.StatusOK},
		{http.MethodHead, "/stats/prometheus", http.StatusNotFound},
		{http.MethodPost, "/stats/prometheus", http.StatusNotFound},
		{http.MethodGet, "/stats", http.StatusNotFound},
		{http.MethodGet, "/clusters", http.StatusNotFound},
		{http.MethodGet, "/config_dump", http.StatusNotFound},
		{http.MethodGet, "/server_info", http.StatusNotFound},
		{http.MethodGet, "/ready", http.StatusNotFound},
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodPost, "/quitquitquit", http.StatusNotFound},
		{http.MethodPost, "/healthcheck/fail", http.StatusNotFound},
		{http.MethodPost, "/runtime_modify?re2.max_program_size.error_level=1", http.StatusNotFound},
		{http.MethodPost, "/logging?level=trace", http.StatusNotFound},
		{http.MethodGet, "/stats/prometheus/../config_dump", http.StatusNotFound},
		{http.MethodGet, "//stats/prometheus", http.StatusNotFound},
		{http.MethodGet, "/STATS/PROMETHEUS", http.StatusNotFound},
		{http.MethodGet, "/stats/prometheus%2F..%2Fconfig_dump", http.StatusNotFound},
	} {
		code, body, err := d.metricsRequest(c.method, c.path)
		if err != nil || code != c.want {
			t.Errorf("%s %s = %d, %v; want %d (%.80q)", c.method, c.path, code, err, c.want, body)
		}
		if c.want == http.StatusOK {
			allowed++
		}
	}
	if got := adminRequests() - before; got != uint64(allowed) {
		t.Errorf("the admin interface got %d requests through the metrics listener, want %d (the allowed ones)", got, allowed)
	}
	d.envoy.WaitReady()
}
