// Package status merges the statuses the translator computed into what is stored, so a
// write happens only when something really changed, LastTransitionTime moves only when a
// condition's status flips, and entries owned by other controllers are kept.
package status

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MergeConditions returns the conditions to store: want's conditions in want's order, each
// keeping the stored LastTransitionTime unless its status changed (then now), followed by
// stored conditions of types want does not set (another writer's, kept as they are).
func MergeConditions(stored, want []metav1.Condition, now time.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(want)+len(stored))
	seen := map[string]bool{}
	for _, c := range want {
		seen[c.Type] = true
		c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		if old := find(stored, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, c)
	}
	for _, c := range stored {
		if !seen[c.Type] {
			out = append(out, c)
		}
	}
	return out
}

// ConditionsEqual compares conditions by everything but LastTransitionTime.
func ConditionsEqual(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

func find(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
