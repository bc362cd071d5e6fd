package translate

import (
	"net/netip"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// TestOwnPortsApplyToCachedBackends: an Envoy's admin port is known only once its
// Envoy runs, so OwnPorts grows between translations; a Backend translated (and
// cached) before must be refused in the next translation, not served from the Cache.
func TestOwnPortsApplyToCachedBackends(t *testing.T) {
	b := &egressv1alpha1.Backend{
		ObjectMeta: metav1.ObjectMeta{Name: "admin", Namespace: "apps", Generation: 1},
		Spec: egressv1alpha1.BackendSpec{Destination: egressv1alpha1.BackendDestination{
			IP:    &egressv1alpha1.IPDestination{Address: "127.0.0.1"},
			Ports: []egressv1alpha1.BackendPort{{Name: "http", Port: 19001, Protocol: egressv1alpha1.PortProtocolHTTP}},
		}},
	}
	res := &egress.Resources{Backends: []*egressv1alpha1.Backend{b}}
	cache := NewCache()
	opts := Options{AddressPolicy: prefixPolicy{netip.MustParsePrefix("169.254.0.0/16")}, Cache: cache}
	steps := []struct {
		name     string
		own      map[uint32]string
		accepted bool
	}{
		{"before the Envoy runs, the port is nobody's", nil, true},
		{"once it is an admin port, the Backend is refused", map[uint32]string{19001: "an Envoy admin interface"}, false},
		{"when that Envoy is gone, it is served again", map[uint32]string{19002: "an Envoy admin interface"}, true},
	}
	for _, step := range steps {
		opts.OwnPorts = step.own
		st := Translate(res, egress.Addresses{}, opts).Statuses.Backends["apps/admin"]
		if got := meta.IsStatusConditionTrue(st.Conditions, egressv1alpha1.ConditionAccepted); got != step.accepted {
			t.Fatalf("%s: Accepted = %v, want %v (%+v)", step.name, got, step.accepted, st.Conditions)
		}
	}
}
