package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestMergeRouteParentsKeepsOtherControllersAndDropsStaleOnes(t *testing.T) {
	ours := gwapiv1.GatewayController("portcullis.io/gateway-controller")
	theirs := gwapiv1.GatewayController("example.com/other")
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	parent := func(name string, ctrl gwapiv1.GatewayController, status metav1.ConditionStatus, ltt metav1.Time) gwapiv1.RouteParentStatus {
		return gwapiv1.RouteParentStatus{ParentRef: gwapiv1.ParentReference{Name: gwapiv1.ObjectName(name)}, ControllerName: ctrl,
			Conditions: []metav1.Condition{{Type: "Accepted", Status: status, Reason: "R", LastTransitionTime: ltt}}}
	}
	stored := []gwapiv1.RouteParentStatus{
		parent("their-gw", theirs, "True", earlier),
		parent("our-gw", ours, "True", earlier),
		parent("our-old-gw", ours, "True", earlier),
	}
	want := []gwapiv1.RouteParentStatus{parent("our-gw", ours, "True", metav1.Time{})}
	got := MergeRouteParents(stored, want, ours, now)
	if len(got) != 2 || got[0].ParentRef.Name != "their-gw" || got[1].ParentRef.Name != "our-gw" {
		t.Fatalf("got parents %+v; want theirs kept, ours replaced, our stale one dropped", got)
	}
	if !got[1].Conditions[0].LastTransitionTime.Equal(&earlier) {
		t.Errorf("an unchanged condition lost its transition time: %v", got[1].Conditions[0].LastTransitionTime)
	}
	if !RouteParentsEqual(got, []gwapiv1.RouteParentStatus{stored[0], stored[1]}) {
		t.Error("RouteParentsEqual should find the merge equal to the stored entries it kept")
	}
}

func TestMergeAncestorsKeepsOtherControllers(t *testing.T) {
	ours := gwapiv1.GatewayController("portcullis.io/gateway-controller")
	other := gwapiv1.PolicyAncestorStatus{AncestorRef: gwapiv1.ParentReference{Name: "x"}, ControllerName: "example.com/other"}
	mine := gwapiv1.PolicyAncestorStatus{AncestorRef: gwapiv1.ParentReference{Name: "gw"}, ControllerName: ours,
		Conditions: []metav1.Condition{{Type: "Accepted", Status: "False", Reason: "Conflicted"}}}
	got := MergeAncestors([]gwapiv1.PolicyAncestorStatus{other}, []gwapiv1.PolicyAncestorStatus{mine}, ours, time.Now())
	if len(got) != 2 || got[0].ControllerName != "example.com/other" || got[1].Conditions[0].Reason != "Conflicted" {
		t.Fatalf("got %+v", got)
	}
	if AncestorsEqual(got, []gwapiv1.PolicyAncestorStatus{other}) {
		t.Fatal("lists of different length compared equal")
	}
}
