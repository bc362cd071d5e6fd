package translate

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/portcullis-io/portcullis/egress"
)

// TestRouteCallersFollowGrantsThatNameRoutes checks the per-namespace memo of
// routeCallers: a grant naming one route admits its callers to that route only, even
// when a sibling route of the namespace was asked about first, and a grant naming none
// admits them to every route of its namespace.
func TestRouteCallersFollowGrantsThatNameRoutes(t *testing.T) {
	api := gwapiv1.ObjectName("api")
	res := &egress.Resources{ReferenceGrants: []gwapiv1.ReferenceGrant{
		callerGrant("team-b", "team-c", &api),
		callerGrant("team-d", "team-e", nil),
	}}
	tr := newTranslator(res, nil, Options{})
	cases := []struct {
		namespace, route string
		want             []string
	}{
		{"team-b", "other", []string{"team-b"}},
		{"team-b", "api", []string{"team-b", "team-c"}},
		{"team-b", "third", []string{"team-b"}},
		{"team-d", "one", []string{"team-d", "team-e"}},
		{"team-d", "two", []string{"team-d", "team-e"}},
		{"team-x", "api", []string{"team-x"}},
	}
	for _, c := range cases {
		if got := tr.routeCallers(types.NamespacedName{Namespace: c.namespace, Name: c.route}); !slices.Equal(got, c.want) {
			t.Errorf("callers of %s/%s = %v, want %v", c.namespace, c.route, got, c.want)
		}
	}
}

// callerGrant admits the Pods of from to the HTTPRoutes of ns (one of them when name is
// set).
func callerGrant(ns, from string, name *gwapiv1.ObjectName) gwapiv1.ReferenceGrant {
	return gwapiv1.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "callers"},
		Spec: gwapiv1beta1.ReferenceGrantSpec{
			From: []gwapiv1beta1.ReferenceGrantFrom{{Group: "", Kind: "Pod", Namespace: gwapiv1.Namespace(from)}},
			To:   []gwapiv1beta1.ReferenceGrantTo{{Group: gwapiv1.GroupName, Kind: "HTTPRoute", Name: name}},
		},
	}
}
