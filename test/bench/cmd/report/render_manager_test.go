package main

import (
	"strings"
	"testing"
)

// inOrder fails unless got holds every want, in order.
func inOrder(t *testing.T, got string, want []string) {
	t.Helper()
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output lacks %q (in order):\n%s", w, got)
		}
		rest = rest[i+len(w):]
	}
}

func managerResults(p50at10k, p99at10k, p50at30k, settleMs, rss, podsAdded float64) map[string][]result {
	change := func(n string, p50, p99 float64) result {
		return result{Name: "BenchmarkManagerOneBackendChanged/backends=" + n, Values: map[string]float64{"p50-ms": p50, "p99-ms": p99, "tries": 30}}
	}
	return map[string][]result{
		// Out of order, as a report never writes them: the summary sorts by size.
		"manager-change": {change("10000", p50at10k, p99at10k), change("1000", 5, 9), change("30000", p50at30k, 3*p99at10k)},
		"manager-create": {{Name: "BenchmarkManagerCreateProgrammed/backends=1000", Values: map[string]float64{"settle-ms": settleMs, "create-ms": 4000}}},
		"manager-memory": {{Name: "BenchmarkManagerMemory/gateways=1/backends=10000/namespaces=500/pods=10000",
			Values: map[string]float64{"rss-MiB": rss, "heap-MiB": rss / 2, "pods-added-rss-MiB": podsAdded, "pods-added-heap-MiB": podsAdded / 2}}},
		"manager-memory-applied": {{Name: "BenchmarkManagerMemory/gateways=1/backends=10000/namespaces=500/pods=1",
			Values: map[string]float64{"rss-MiB": rss + 10, "heap-MiB": (rss + 10) / 2, "anon-peak-MiB": rss - 30}}},
	}
}

func TestManagerSummaryJudgesEveryTarget(t *testing.T) {
	tests := []struct {
		name string
		by   map[string][]result
		want []string // lines of the summary table, in order
	}{
		{
			name: "every target met",
			by:   managerResults(40, 90, 120, 4200, 480, 40),
			want: []string{"among 10000, through the real reconciler (event → snapshot published) | p50 < 50 ms, p99 < 100 ms | p50 40.0 ms, p99 90.0 ms | yes",
				"| ... its growth | linear | 0.80× the per-Backend p50 of 1000 Backends at 30000 | yes",
				"| 1000 Backends + HTTPRoutes created at once → all Programmed | < 5 s after the last create | 4.20 s | yes",
				"| manager RSS with 10000 Backends + routes + 20000 Secrets | < 512 MiB | 480 MiB RSS (live heap 240 MiB) | yes",
				"| 10000 pods watched | < 64 MiB added | +40 MiB RSS (live heap +20 MiB) | yes",
				"| ... the same created as `kubectl apply` leaves them | < 512 MiB | 490 MiB RSS (live heap 245 MiB, peak anonymous 450 MiB) | yes"},
		},
		{
			name: "every target missed",
			by:   managerResults(60, 120, 400, 9000, 600, 70),
			want: []string{"p50 60.0 ms, p99 120.0 ms | **no**", "2.67× the per-Backend p50 of 1000 Backends at 30000 | **no**",
				"9.00 s | **no**", "600 MiB RSS (live heap 300 MiB) | **no**", "+70 MiB RSS (live heap +35 MiB) | **no**",
				"610 MiB RSS (live heap 305 MiB, peak anonymous 570 MiB) | **no**"},
		},
		{
			name: "applied with kubectl, the peak anonymous memory alone misses",
			by: func() map[string][]result {
				by := managerResults(40, 90, 120, 4200, 480, 40)
				by["manager-memory-applied"][0].Values["anon-peak-MiB"] = 520
				return by
			}(),
			want: []string{"490 MiB RSS (live heap 245 MiB, peak anonymous 520 MiB) | **no**"},
		},
		{
			name: "the p99 alone misses",
			by:   managerResults(40, 101, 120, 4200, 480, 40),
			want: []string{"p50 40.0 ms, p99 101.0 ms | **no**"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			renderManagerSummary(&b, tc.by)
			inOrder(t, b.String(), tc.want)
		})
	}
}

func TestManagerSummaryJudgesTheLargestSizeWithout10000(t *testing.T) {
	by := map[string][]result{"manager-change": {{Name: "BenchmarkManagerOneBackendChanged/backends=1000", Values: map[string]float64{"p50-ms": 5, "p99-ms": 9}}}}
	var b strings.Builder
	renderManagerSummary(&b, by)
	got := b.String()
	inOrder(t, got, []string{"among 1000, through the real reconciler", "p50 5.0 ms, p99 9.0 ms | yes"})
	if strings.Contains(got, "growth") {
		t.Errorf("one size judges no growth:\n%s", got)
	}
}

func TestManagerSectionsListEverySize(t *testing.T) {
	by := managerResults(40, 90, 120, 4200, 480, 40)
	by["manager-memory"][0].Values["pods-rss-MiB"] = 520
	var b strings.Builder
	renderManager(&b, by, []stepRun{{step: step{key: "manager-change"}, hot: []hotFunction{{"controllers.(*Reconciler).Reconcile", 97.5}}}})
	inOrder(t, b.String(), []string{
		"## 10. One Backend changed, through the real manager", "| 1000 | 30 | 5.0 | ", "| 10000 | 30 | 40.0 | ", "| 30000 | 30 | 120.0 | ",
		"| controllers.(*Reconciler).Reconcile | 97.5% |",
		"## 11. Created at once until Programmed", "| 1000 | 4.00 | 4.20 |",
		"## 12. Manager memory", "| 10000 Backends + HTTPRoutes, 20000 Secrets, 500 namespaces | 480 |", "| ... and 10000 running pods | 520 |",
		"| 10000 Backends + HTTPRoutes, 20000 Secrets, 500 namespaces, created as `kubectl apply` leaves them", "| 490 |",
	})
}

func TestManagerStepsFollowTheSkipFlags(t *testing.T) {
	keys := func(c config) (out []string) {
		for _, s := range managerSteps(c) {
			out = append(out, s.key)
		}
		return out
	}
	c := config{manager: managerConfig{sizes: "1000", changes: 30, create: 1000, memory: "10000/500/10000"}}
	if got := strings.Join(keys(c), ","); got != "manager-change,manager-create,manager-memory,manager-memory-applied" {
		t.Errorf("steps = %s", got)
	}
	if applied := managerSteps(c)[3]; strings.Join(applied.env, " ") != "BENCH_MANAGER_MEMORY=10000/500/1 BENCH_MANAGER_MEMORY_APPLIED=1" {
		t.Errorf("the kubectl-applied memory run's settings = %v", applied.env)
	}
	c.skipPropagation = true // the creation benchmark needs Envoy
	if got := strings.Join(keys(c), ","); got != "manager-change,manager-memory,manager-memory-applied" {
		t.Errorf("steps without Envoy = %s", got)
	}
	c.manager.skip = true
	if got := keys(c); len(got) != 0 {
		t.Errorf("steps with -skip-manager = %v", got)
	}
}

// TestManagerChangeRunsEachSizeInItsOwnProcess: one step per size, so that no size
// translates the objects a smaller one left in the API server; only the target size
// is profiled.
func TestManagerChangeRunsEachSizeInItsOwnProcess(t *testing.T) {
	var got []string
	for _, s := range managerSteps(config{manager: managerConfig{sizes: "1000,10000,30000", changes: 30, create: 1000, memory: "10000/500/10000"}}) {
		if s.key == "manager-change" {
			got = append(got, strings.Join(s.env, " ")+" profile="+s.profileEnv)
		}
	}
	want := []string{"BENCH_MANAGER_SIZES=1000 profile=", "BENCH_MANAGER_SIZES=10000 profile=BENCH_MANAGER_PROFILE", "BENCH_MANAGER_SIZES=30000 profile="}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("change steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestManagerChangeSectionShowsTheFirstTryApart: a row per size, smallest first, with
// the first try and the slowest of the others beside the percentiles.
func TestManagerChangeSectionShowsTheFirstTryApart(t *testing.T) {
	r := func(n string, p50, p99, first, rest float64) result {
		return result{Name: "BenchmarkManagerOneBackendChanged/backends=" + n, Values: map[string]float64{
			"tries": 60, "p50-ms": p50, "p95-ms": p50 * 2, "p99-ms": p99, "max-ms": p99, "first-ms": first, "rest-max-ms": rest, "create-s": 50, "settle-s": 49}}
	}
	var b strings.Builder
	renderManagerChange(&b, []result{r("10000", 35, 114, 114, 98.9), r("1000", 9.2, 21.3, 15, 21.3)})
	inOrder(t, b.String(), []string{"| first ms | max of the rest ms |",
		"| 1000 | 60 | 9.2 | 18.4 | 21.3 | 21.3 | 15.0 | 21.3 | 50 | 49 |", "| 10000 | 60 | 35.0 | 70.0 | 114.0 | 114.0 | 114.0 | 98.9 | 50 | 49 |"})
}
