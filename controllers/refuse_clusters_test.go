package controllers

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// TestRefuseClustersLeavesTranslationsStatusesAlone refuses the Backend of one cluster
// in statuses whose Backend map the remembered translation shares (markable does not
// copy it): the refusal must show in the reconcile's statuses and nowhere in the shared
// map, and a reconcile that refuses nothing must keep the very map.
func TestRefuseClustersLeavesTranslationsStatusesAlone(t *testing.T) {
	pending := func() *egressv1alpha1.BackendStatus {
		return &egressv1alpha1.BackendStatus{Conditions: []metav1.Condition{{Type: egressv1alpha1.ConditionProgrammed, Status: metav1.ConditionUnknown, Reason: egressv1alpha1.ReasonPending}}}
	}
	shared := map[string]*egressv1alpha1.BackendStatus{"team-a/api": pending(), "team-a/other": pending()}
	gw := ir.Gateway{Name: "team-a/egress", Clusters: []*ir.Cluster{
		{Name: "api-443", Origin: ir.ClusterOrigin{Kind: ir.OriginBackend, Namespace: "team-a", Name: "api"}},
		{Name: "other-443", Origin: ir.ClusterOrigin{Kind: ir.OriginBackend, Namespace: "team-a", Name: "other"}},
	}}
	tests := []struct {
		name    string
		why     map[string]error
		refused bool
	}{
		{"nothing refused keeps the shared map", nil, false},
		{"a cluster that is not refused keeps the shared map", map[string]error{clusterUnit + "gone-443": errors.New("no such cluster")}, false},
		{"a refused cluster's Backend is refused in a copy", map[string]error{clusterUnit + "api-443": errors.New("bad SAN")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := translate.Statuses{Backends: shared}
			refuseClusters(&st, gw, tt.why, "Gateway %s, cluster %s: %v")
			sameMap := reflect.ValueOf(st.Backends).UnsafePointer() == reflect.ValueOf(shared).UnsafePointer()
			if sameMap == tt.refused {
				t.Errorf("the reconcile's Backend statuses are the translation's map: %v, want %v", sameMap, !tt.refused)
			}
			got := st.Backends["team-a/api"].Conditions[0]
			if refused := got.Status == metav1.ConditionFalse && strings.Contains(got.Message, "bad SAN"); refused != tt.refused {
				t.Errorf("team-a/api Programmed %s %q; refused %v, want %v", got.Status, got.Message, refused, tt.refused)
			}
			if other := st.Backends["team-a/other"]; other != shared["team-a/other"] {
				t.Error("the status of team-a/other, not refused, is not translation's own")
			}
			for key, s := range shared {
				if c := s.Conditions[0]; c.Reason != egressv1alpha1.ReasonPending || c.Message != "" {
					t.Errorf("the shared status of %s changed: %+v", key, c)
				}
			}
		})
	}
}
