package controllers

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// TestVersionContentBuildsOnTheLastVersion checks contentOf against the version
// published last: the same Backends at the same generations reuse its generations
// whole; a new generation or one more Backend share its base map and list what differs;
// a Backend gone or no longer usable gets a base of its own. Each carries exactly the
// usable Backends at the generations their statuses observed.
func TestVersionContentBuildsOnTheLastVersion(t *testing.T) {
	// result translated the usable Backends at their generations, and unusable ones.
	result := func(usable map[string]int64, unusable ...string) translate.Result {
		r := translate.Result{BackendGateways: map[string][]string{}}
		r.Statuses.Backends = map[string]*egressv1alpha1.BackendStatus{}
		for key, gen := range usable {
			r.Statuses.Backends[key] = &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{
				{Type: egressv1alpha1.ConditionAccepted, Status: metav1.ConditionTrue, ObservedGeneration: gen},
				{Type: egressv1alpha1.ConditionResolvedRefs, Status: metav1.ConditionTrue, ObservedGeneration: gen},
			}}
			r.BackendGateways[key] = []string{"egress", "other"}
		}
		for _, key := range unusable {
			r.Statuses.Backends[key] = &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{
				{Type: egressv1alpha1.ConditionAccepted, Status: metav1.ConditionFalse, ObservedGeneration: 9},
			}}
			r.BackendGateways[key] = []string{"egress"}
		}
		return r
	}
	two := map[string]int64{"ns/a": 1, "ns/b": 4}
	last := contentOf("egress", nil, result(two), nil)

	cases := []struct {
		name   string
		result translate.Result
		want   map[string]int64
		base   string // "same": the last version's base map; "new": one of its own
		delta  int
	}{
		{"same Backends, same generations", result(two), two, "same", 0},
		{"a new generation", result(map[string]int64{"ns/a": 2, "ns/b": 4}), map[string]int64{"ns/a": 2, "ns/b": 4}, "same", 1},
		{"one more Backend", result(map[string]int64{"ns/a": 1, "ns/b": 4, "ns/c": 1}), map[string]int64{"ns/a": 1, "ns/b": 4, "ns/c": 1}, "same", 1},
		{"a Backend gone", result(map[string]int64{"ns/a": 1}), map[string]int64{"ns/a": 1}, "new", 0},
		{"a Backend no longer usable", result(map[string]int64{"ns/a": 1}, "ns/b"), map[string]int64{"ns/a": 1}, "new", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := contentOf("egress", nil, c.result, &last).backends
			if !reflect.DeepEqual(got.all(), c.want) || got.n != len(c.want) {
				t.Errorf("generations = %v (%d), want %v", got.all(), got.n, c.want)
			}
			if base := map[bool]string{true: "same", false: "new"}[sameMap(got.base, last.backends.base)]; base != c.base || len(got.delta) != c.delta {
				t.Errorf("base map %s with %d entries of delta, want %s with %d", base, len(got.delta), c.base, c.delta)
			}
		})
	}
	if !reflect.DeepEqual(last.backends.all(), two) {
		t.Errorf("the last version's generations changed to %v, want %v", last.backends.all(), two)
	}
}

// TestVersionGenerationsFollowRandomEdits walks 600 versions of random edits (a new
// generation, a Backend added or removed) and compares each version, and each of the
// versions still kept, with plain maps: a version's generations never change once made,
// and its delta stays within maxDelta.
func TestVersionGenerationsFollowRandomEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	model := map[string]int64{}
	for i := range 200 {
		model["ns/b"+strconv.Itoa(i)] = 1
	}
	type kept struct {
		gens versionGenerations
		want map[string]int64
	}
	var log []kept
	var last versionGenerations
	for v := range 600 {
		edit(rng, model)
		last = nextGenerations(last, func(f func(string, int64)) {
			for _, k := range slices.Sorted(maps.Keys(model)) {
				f(k, model[k])
			}
		})
		if len(last.delta) > maxDelta(last.n) {
			t.Fatalf("version %d: %d entries of delta for %d Backends", v, len(last.delta), last.n)
		}
		log = append(log, kept{last, maps.Clone(model)})
		if len(log) > maxVersions {
			log = log[1:]
		}
		for i, k := range log {
			if got := k.gens.all(); !reflect.DeepEqual(got, k.want) || k.gens.n != len(k.want) {
				t.Fatalf("version %d, kept version %d: generations %v (%d), want %v", v, i, got, k.gens.n, k.want)
			}
			for key, want := range k.want {
				if got, ok := k.gens.get(key); !ok || got != want {
					t.Fatalf("version %d, kept version %d: %s at %d (%v), want %d", v, i, key, got, ok, want)
				}
			}
		}
	}
}

// edit changes model as a change would: mostly a new generation, sometimes a Backend
// created or deleted.
func edit(rng *rand.Rand, model map[string]int64) {
	keys := slices.Sorted(maps.Keys(model))
	switch r := rng.IntN(10); {
	case r < 7 && len(keys) > 0:
		model[keys[rng.IntN(len(keys))]]++
	case r < 9:
		model["ns/new"+strconv.Itoa(rng.IntN(1_000_000))] = 1
	case len(keys) > 0:
		delete(model, keys[rng.IntN(len(keys))])
	}
}

func sameMap(a, b map[string]int64) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
