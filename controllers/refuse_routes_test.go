package controllers

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/translate"
)

// TestRefuseRoutesLeavesTranslationsStatusesAlone refuses one route of a Gateway in
// statuses whose route map the remembered translation shares (markable no longer copies
// it): the refusal must show in the reconcile's statuses and nowhere in the shared map,
// and a reconcile that refuses nothing must keep the very map.
func TestRefuseRoutesLeavesTranslationsStatusesAlone(t *testing.T) {
	accepted := func() []gwapiv1.RouteParentStatus {
		return []gwapiv1.RouteParentStatus{{
			ParentRef:  gwapiv1.ParentReference{Name: "egress"},
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}},
		}}
	}
	shared := map[string][]gwapiv1.RouteParentStatus{"team-a/api": accepted(), "team-a/other": accepted()}
	tests := []struct {
		name    string
		why     map[string]error
		refused bool
	}{
		{"nothing refused keeps the shared map", nil, false},
		{"a refused route is refused in a copy", map[string]error{"team-a/api": errors.New("bad regex")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := translate.Statuses{HTTPRoutes: shared}
			refuseRoutes(&st, "team-a/egress", tt.why, "left out")
			sameMap := reflect.ValueOf(st.HTTPRoutes).UnsafePointer() == reflect.ValueOf(shared).UnsafePointer()
			if sameMap == tt.refused {
				t.Errorf("the reconcile's route statuses are the translation's map: %v, want %v", sameMap, !tt.refused)
			}
			got := st.HTTPRoutes["team-a/api"][0].Conditions[0]
			if refused := got.Status == metav1.ConditionFalse && strings.Contains(got.Message, "bad regex"); refused != tt.refused {
				t.Errorf("team-a/api Accepted %s %q; refused %v, want %v", got.Status, got.Message, refused, tt.refused)
			}
			for key, parents := range shared {
				if c := parents[0].Conditions[0]; c.Status != metav1.ConditionTrue || c.Message != "" {
					t.Errorf("the shared statuses of %s changed: %+v", key, c)
				}
			}
		})
	}
}
