package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// apiRequests counts the API server's requests for resources (apiserver_request_total)
// by "verb resource[/subresource]", watches left out: what a benchmark's manager asked
// of the API server, which on two cores shares the CPU with it. The benchmark's own
// requests count too.
type apiRequests map[string]float64

// scrapeAPIRequests reads the API server's metrics through its admin client.
func scrapeAPIRequests(b *testing.B) apiRequests {
	cs, err := kubernetes.NewForConfig(sharedAPIServer(b).Config)
	if err != nil {
		b.Fatal(err)
	}
	body, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("scraping the API server: %v", err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		b.Fatalf("the API server's metrics: %v", err)
	}
	out := apiRequests{}
	if f := families["apiserver_request_total"]; f != nil {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["verb"] == "WATCH" || labels["resource"] == "" {
				continue
			}
			key := labels["verb"] + " " + labels["resource"]
			if s := labels["subresource"]; s != "" {
				key += "/" + s
			}
			out[key] += m.GetCounter().GetValue()
		}
	}
	return out
}

// since is what was counted after before was.
func (a apiRequests) since(before apiRequests) apiRequests {
	out := apiRequests{}
	for k, v := range a {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// report writes each count as a benchmark metric per object, for b.N batches of n.
func (a apiRequests) report(b *testing.B, n int) {
	for k, v := range a {
		unit := strings.NewReplacer(" ", "-", "/", "-").Replace(strings.ToLower(k)) + "/obj"
		b.ReportMetric(v/float64(n*b.N), unit)
	}
	b.Logf("API server requests over %d batches of %d: %v", b.N, n, a)
}

// envAPIServerProfile names a file to write a CPU profile of the API server to, taken
// over the first envAPIServerProfileSeconds of a benchmark's timed work (its
// /debug/pprof, which kube-apiserver serves by default).
const (
	envAPIServerProfile        = "BENCH_APISERVER_PROFILE"
	envAPIServerProfileSeconds = "BENCH_APISERVER_PROFILE_SECONDS"
)

// profileAPIServer starts the profile envAPIServerProfile asks for; wait returns once
// it is written.
func profileAPIServer(b *testing.B) (wait func()) {
	path := os.Getenv(envAPIServerProfile)
	if path == "" {
		return func() {}
	}
	seconds := envInt(b, envAPIServerProfileSeconds, 20)
	cs, err := kubernetes.NewForConfig(sharedAPIServer(b).Config)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		body, err := cs.RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).
			Timeout(time.Duration(seconds+30) * time.Second).DoRaw(context.Background())
		if err == nil {
			err = os.WriteFile(path, body, 0o644)
		}
		done <- err
	}()
	return func() {
		if err := <-done; err != nil {
			b.Errorf("profiling the API server: %v", err)
		}
	}
}
