package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// The Grafana dashboard of per-Backend metrics, and the README that quotes its queries.
const (
	dashboardPath  = "config/grafana/portcullis-backends.json"
	metricsSection = "## Per-destination metrics"
)

// dashboard is what the tests read of the Grafana dashboard JSON.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"` // a string, or {query, refId}
			Regex string `json:"regex"`
		} `json:"list"`
	} `json:"templating"`
}

// repoFile reads a file of the repository.
func repoFile(t *testing.T, path string) []byte {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadDashboard parses the dashboard; it must have one query per panel.
func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(repoFile(t, dashboardPath), &d); err != nil {
		t.Fatalf("%s does not parse: %v", dashboardPath, err)
	}
	if len(d.Panels) != 3 {
		t.Fatalf("%s has %d panels, want 3", dashboardPath, len(d.Panels))
	}
	for _, p := range d.Panels {
		if len(p.Targets) != 1 || strings.TrimSpace(p.Targets[0].Expr) == "" {
			t.Fatalf("panel %q has %d queries, want one", p.Title, len(p.Targets))
		}
	}
	return d
}

// panelQueries are the PromQL queries of the panels, in order.
func (d dashboard) panelQueries() []string {
	var out []string
	for _, p := range d.Panels {
		out = append(out, p.Targets[0].Expr)
	}
	return out
}

// variableQueries are the Prometheus queries of the query variables.
func (d dashboard) variableQueries() []string {
	var out []string
	for _, v := range d.Templating.List {
		switch q := v.Query.(type) {
		case map[string]any:
			out = append(out, q["query"].(string))
		case string:
			if v.Type == "query" {
				out = append(out, q)
			}
		}
	}
	return out
}

// variableRegex returns the regular expression (a /.../ JavaScript literal in Grafana)
// of a variable, compiled as RE2.
func (d dashboard) variableRegex(t *testing.T, name string) *regexp.Regexp {
	t.Helper()
	for _, v := range d.Templating.List {
		if v.Name == name {
			re := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(v.Regex, "/"), "/"), `\/`, "/")
			return regexp.MustCompile(re)
		}
	}
	t.Fatalf("the dashboard has no variable %q", name)
	return nil
}

var (
	// metricSelector finds the metric names of a query: each is followed by its matchers.
	metricSelector = regexp.MustCompile(`\b(envoy_[a-z0-9_]+)\{`)
	// clusterMatcher finds the regular expressions a query matches envoy_cluster_name with.
	clusterMatcher = regexp.MustCompile(`envoy_cluster_name=~"([^"]+)"`)
	// backendLabel finds the regular expressions label_replace takes the backend label from.
	backendLabel = regexp.MustCompile(`"backend", "\$1", "envoy_cluster_name", "([^"]+)"\)`)
)

// metricNames are the metrics a query reads.
func metricNames(query string) []string {
	var out []string
	for _, m := range metricSelector.FindAllStringSubmatch(query, -1) {
		out = append(out, m[1])
	}
	return out
}

// promqlBlocks returns the ```promql blocks of a README section, each as one string.
func promqlBlocks(t *testing.T, readme, heading string) []string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q section", heading)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var out []string
	for rest := section; ; {
		_, block, found := strings.Cut(rest, "```promql\n")
		if !found {
			return out
		}
		query, after, _ := strings.Cut(block, "\n```")
		out = append(out, query)
		rest = after
	}
}

// TestREADMEQuotesTheDashboardQueries: the README's per-destination metrics section shows
// the dashboard's three queries verbatim, in panel order, so they never drift apart.
func TestREADMEQuotesTheDashboardQueries(t *testing.T) {
	want := loadDashboard(t).panelQueries()
	got := promqlBlocks(t, string(repoFile(t, "README.md")), metricsSection)
	if len(got) != len(want) {
		t.Fatalf("README %q shows %d promql blocks, the dashboard has %d queries", metricsSection, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("query %d differs:\nREADME:\n%s\ndashboard:\n%s", i+1, got[i], want[i])
		}
	}
}
