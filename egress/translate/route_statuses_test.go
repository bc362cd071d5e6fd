package translate

import (
	"path/filepath"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestKeptRouteSideLendsItsStatuses translates the same Gateway three times with one
// Cache: the second and third take the route side from the Cache and must hand out
// the very statuses it keeps (the same memory for every route), equal to a cold
// translation's, without changing what the second returned.
func TestKeptRouteSideLendsItsStatuses(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "tenant-isolation.in.yaml"))
	cache, versions := NewCache(), newAPIVersions()
	compareWithCold(t, "first translation", cache, versions, res, addrs, opts)
	second := compareWithCold(t, "second translation", cache, versions, res, addrs, opts)
	third := compareWithCold(t, "third translation", cache, versions, res, addrs, opts)
	if len(third.Statuses.HTTPRoutes) == 0 {
		t.Fatal("no HTTPRoute statuses: the input should attach routes")
	}
	for key, parents := range third.Statuses.HTTPRoutes {
		if &parents[0] != &second.Statuses.HTTPRoutes[key][0] {
			t.Errorf("%s: the third translation copied the statuses the kept route side lent the second", key)
		}
	}
}

// TestRoutesOfTwoGatewaysKeepBothStatuses attaches every route to two Gateways. When
// both route sides come from the Cache, the first lends its statuses and the second
// files its own beside them: it must copy what it was lent, or the first route side
// would carry the second's statuses into the next translation (a cold translation then
// differs, with three parents a route).
func TestRoutesOfTwoGatewaysKeepBothStatuses(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "tenant-isolation.in.yaml"))
	other := *res.Gateways[0].DeepCopy()
	other.Name = "egress-b"
	res.Gateways = append(res.Gateways, other)
	for i := range res.HTTPRoutes {
		r := res.HTTPRoutes[i]
		ref := *r.Spec.ParentRefs[0].DeepCopy()
		ref.Name = gwapiv1.ObjectName(other.Name)
		r.Spec.ParentRefs = append(r.Spec.ParentRefs, ref)
	}
	cache, versions := NewCache(), newAPIVersions()
	var last Result
	for _, step := range []string{"first translation", "second translation", "third translation"} {
		last = compareWithCold(t, step, cache, versions, res, addrs, opts)
	}
	for key, parents := range last.Statuses.HTTPRoutes {
		if len(parents) != 2 {
			t.Errorf("%s: %d parent statuses, want one per Gateway", key, len(parents))
		}
	}
}
