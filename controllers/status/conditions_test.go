package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMergeConditions(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := time.Date(2026, 6, 1, 12, 0, 0, 500, time.UTC)
	cond := func(typ string, status metav1.ConditionStatus, reason string, ltt metav1.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason, LastTransitionTime: ltt}
	}
	tests := []struct {
		name   string
		stored []metav1.Condition
		want   []metav1.Condition
		expect []metav1.Condition
	}{
		{
			name:   "a new condition gets now, truncated to seconds",
			want:   []metav1.Condition{cond("Accepted", "True", "Accepted", metav1.Time{})},
			expect: []metav1.Condition{cond("Accepted", "True", "Accepted", metav1.NewTime(now.Truncate(time.Second)))},
		},
		{
			name:   "an unchanged status keeps its transition time even when the reason changes",
			stored: []metav1.Condition{cond("Accepted", "False", "Invalid", earlier)},
			want:   []metav1.Condition{cond("Accepted", "False", "UnsupportedProtocol", metav1.Time{})},
			expect: []metav1.Condition{cond("Accepted", "False", "UnsupportedProtocol", earlier)},
		},
		{
			name:   "a flipped status moves the transition time",
			stored: []metav1.Condition{cond("Programmed", "False", "Pending", earlier)},
			want:   []metav1.Condition{cond("Programmed", "True", "Programmed", metav1.Time{})},
			expect: []metav1.Condition{cond("Programmed", "True", "Programmed", metav1.NewTime(now.Truncate(time.Second)))},
		},
		{
			name:   "conditions of types this writer does not set are kept after its own",
			stored: []metav1.Condition{cond("example.com/Audited", "True", "Audited", earlier), cond("Accepted", "True", "Accepted", earlier)},
			want:   []metav1.Condition{cond("Accepted", "True", "Accepted", metav1.Time{})},
			expect: []metav1.Condition{cond("Accepted", "True", "Accepted", earlier), cond("example.com/Audited", "True", "Audited", earlier)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MergeConditions(tt.stored, tt.want, now)
			if !ConditionsEqual(got, tt.expect) {
				t.Fatalf("got %+v\nwant %+v", got, tt.expect)
			}
			for i := range got {
				if !got[i].LastTransitionTime.Equal(&tt.expect[i].LastTransitionTime) {
					t.Errorf("%s: LastTransitionTime %v, want %v", got[i].Type, got[i].LastTransitionTime, tt.expect[i].LastTransitionTime)
				}
			}
		})
	}
}

func TestConditionsEqualIgnoresOnlyTransitionTime(t *testing.T) {
	a := []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "m", ObservedGeneration: 2, LastTransitionTime: metav1.Now()}}
	b := []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "m", ObservedGeneration: 2}}
	if !ConditionsEqual(a, b) {
		t.Fatal("conditions differing only in LastTransitionTime must compare equal")
	}
	b[0].ObservedGeneration = 3
	if ConditionsEqual(a, b) {
		t.Fatal("a different observedGeneration must compare unequal")
	}
}
