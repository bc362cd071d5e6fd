package controllers

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// TestBackendGaugeCountsEachTypeAndStatus: each Backend counts once under each of its
// conditions' type and status, and a pair seen before that no Backend has any more
// reads 0 instead of disappearing.
func TestBackendGaugeCountsEachTypeAndStatus(t *testing.T) {
	st := func(conds ...metav1.Condition) *egressv1alpha1.BackendStatus {
		return &egressv1alpha1.BackendStatus{Conditions: conds}
	}
	accepted := metav1.Condition{Type: egressv1alpha1.ConditionAccepted, Status: metav1.ConditionTrue}
	refused := metav1.Condition{Type: egressv1alpha1.ConditionAccepted, Status: metav1.ConditionFalse}
	resolved := metav1.Condition{Type: egressv1alpha1.ConditionResolvedRefs, Status: metav1.ConditionTrue}
	unknown := metav1.Condition{Type: "Programmed", Status: metav1.ConditionUnknown}

	m := newOperatorMetrics(nil)
	m.observe(0, translationFull, map[string]*egressv1alpha1.BackendStatus{
		"a/x": st(accepted, resolved), "a/y": st(accepted, unknown), "b/z": st(refused), "b/w": st(),
	})
	want := map[[2]string]int{{"Accepted", "True"}: 2, {"Accepted", "False"}: 1, {"ResolvedRefs", "True"}: 1, {"Programmed", "Unknown"}: 1}
	if !maps.Equal(m.backendConditions, want) {
		t.Fatalf("counts %v, want %v", m.backendConditions, want)
	}

	m.observe(0, translationDelta, map[string]*egressv1alpha1.BackendStatus{"a/x": st(accepted, resolved)})
	want = map[[2]string]int{{"Accepted", "True"}: 1, {"Accepted", "False"}: 0, {"ResolvedRefs", "True"}: 1, {"Programmed", "Unknown"}: 0}
	if !maps.Equal(m.backendConditions, want) {
		t.Fatalf("after the change: counts %v, want %v", m.backendConditions, want)
	}
}
