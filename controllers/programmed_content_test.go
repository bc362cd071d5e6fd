package controllers

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// TestVersionContentSharesTheLastMapOnlyWhenEqual checks contentOf against the version
// published last: the same Backends at the same generations reuse its map; a new
// generation, a Backend gone or no longer usable, or one more Backend each get a map of
// their own with what the new snapshot carries.
func TestVersionContentSharesTheLastMapOnlyWhenEqual(t *testing.T) {
	usable := &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{
		{Type: egressv1alpha1.ConditionAccepted, Status: metav1.ConditionTrue},
		{Type: egressv1alpha1.ConditionResolvedRefs, Status: metav1.ConditionTrue},
	}}
	unusable := &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{
		{Type: egressv1alpha1.ConditionAccepted, Status: metav1.ConditionFalse},
	}}
	result := func(statuses map[string]*egressv1alpha1.BackendStatus) translate.Result {
		r := translate.Result{BackendGateways: map[string][]string{}}
		r.Statuses.Backends = statuses
		for key := range statuses {
			r.BackendGateways[key] = []string{"egress", "other"}
		}
		return r
	}
	gens := func(m map[string]int64) generations { return func(key string) int64 { return m[key] } }
	two := map[string]*egressv1alpha1.BackendStatus{"ns/a": usable, "ns/b": usable}
	last := contentOf("egress", nil, result(two), gens(map[string]int64{"ns/a": 1, "ns/b": 4}), nil)

	cases := []struct {
		name     string
		statuses map[string]*egressv1alpha1.BackendStatus
		gens     map[string]int64
		want     map[string]int64
		shared   bool
	}{
		{"same Backends, same generations", two, map[string]int64{"ns/a": 1, "ns/b": 4}, map[string]int64{"ns/a": 1, "ns/b": 4}, true},
		{"a new generation", two, map[string]int64{"ns/a": 2, "ns/b": 4}, map[string]int64{"ns/a": 2, "ns/b": 4}, false},
		{"a Backend gone", map[string]*egressv1alpha1.BackendStatus{"ns/a": usable}, map[string]int64{"ns/a": 1}, map[string]int64{"ns/a": 1}, false},
		{"a Backend no longer usable", map[string]*egressv1alpha1.BackendStatus{"ns/a": usable, "ns/b": unusable}, map[string]int64{"ns/a": 1, "ns/b": 4}, map[string]int64{"ns/a": 1}, false},
		{"one more Backend", map[string]*egressv1alpha1.BackendStatus{"ns/a": usable, "ns/b": usable, "ns/c": usable}, map[string]int64{"ns/a": 1, "ns/b": 4, "ns/c": 1}, map[string]int64{"ns/a": 1, "ns/b": 4, "ns/c": 1}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := contentOf("egress", nil, result(c.statuses), gens(c.gens), &last)
			if !reflect.DeepEqual(got.backends, c.want) {
				t.Errorf("backends = %v, want %v", got.backends, c.want)
			}
			if shared := reflect.ValueOf(got.backends).UnsafePointer() == reflect.ValueOf(last.backends).UnsafePointer(); shared != c.shared {
				t.Errorf("shares the last version's map: %v, want %v", shared, c.shared)
			}
		})
	}
	if want := map[string]int64{"ns/a": 1, "ns/b": 4}; !reflect.DeepEqual(last.backends, want) {
		t.Errorf("the last version's map changed to %v, want %v", last.backends, want)
	}
}
