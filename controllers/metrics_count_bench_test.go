package controllers

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// BenchmarkCountBackendConditions counts the conditions of 10,000 Backend statuses of
// three conditions each, as every reconcile does for the Backend gauge.
func BenchmarkCountBackendConditions(b *testing.B) {
	statuses := make(map[string]*egressv1alpha1.BackendStatus, 10000)
	for i := range 10000 {
		statuses[fmt.Sprintf("ns/b%d", i)] = &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{
			{Type: egressv1alpha1.ConditionAccepted, Status: metav1.ConditionTrue},
			{Type: egressv1alpha1.ConditionResolvedRefs, Status: metav1.ConditionTrue},
			{Type: egressv1alpha1.ConditionProgrammed, Status: metav1.ConditionStatus([]string{"True", "False"}[i%2])},
		}}
	}
	for b.Loop() {
		countConditions(statuses)
	}
}
