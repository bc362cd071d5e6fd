package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
)

// TestMergeXBackendParents: another controller's parent is kept, ours is replaced with
// its transition time kept while unchanged, and ours for a Gateway no longer there goes.
func TestMergeXBackendParents(t *testing.T) {
	ours := gwapiv1.GatewayController("portcullis.io/gateway-controller")
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	parent := func(gw string, ctrl gwapiv1.GatewayController, reason string, ltt metav1.Time) gwapixv1alpha1.BackendAncestorStatus {
		return gwapixv1alpha1.BackendAncestorStatus{AncestorRef: gwapiv1.ParentReference{Name: gwapiv1.ObjectName(gw)}, ControllerName: ctrl,
			Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: reason, LastTransitionTime: ltt}}}
	}
	stored := []gwapixv1alpha1.BackendAncestorStatus{
		parent("their-gw", "example.com/other", "Accepted", earlier),
		parent("gw", ours, "Accepted", earlier),
		parent("gone", ours, "Accepted", earlier),
	}
	got := MergeXBackendParents(stored, []gwapixv1alpha1.BackendAncestorStatus{parent("gw", ours, "Accepted", metav1.Time{})}, ours, time.Now())
	if len(got) != 2 || got[0].AncestorRef.Name != "their-gw" || got[1].AncestorRef.Name != "gw" {
		t.Fatalf("got %+v; want theirs kept, ours replaced, the gone Gateway's dropped", got)
	}
	if !got[1].Conditions[0].LastTransitionTime.Equal(&earlier) {
		t.Errorf("an unchanged condition lost its transition time: %v", got[1].Conditions[0].LastTransitionTime)
	}
	if !XBackendParentsEqual(got, stored[:2]) || XBackendParentsEqual(got, stored) {
		t.Error("XBackendParentsEqual disagrees with the merge")
	}
	if dropped := MergeXBackendParents(stored, nil, ours, time.Now()); len(dropped) != 1 || dropped[0].ControllerName != "example.com/other" {
		t.Errorf("merging nothing of ours left %+v", dropped)
	}
}
