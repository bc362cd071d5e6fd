package translate

import (
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// TestReplaceByNameCopiesOnlyForADifference: a delta's secrets are the base's list
// itself when every secret it resolved again is the one in place with the same data,
// and a copy with the new one in place (the base's list untouched) when the data of
// one changed; a name the base lacks fails the delta.
func TestReplaceByNameCopiesOnlyForADifference(t *testing.T) {
	base := []ir.Secret{
		{Name: "a", Kind: ir.SecretTLSCertificate, Certificate: []byte("chain-a"), PrivateKey: []byte("key-a")},
		{Name: "b", Kind: ir.SecretCACertificate, Certificate: []byte("bundle-b")},
		{Name: "c", Kind: ir.SecretCACertificate, Certificate: []byte("bundle-c")},
	}
	name := func(s ir.Secret) string { return s.Name }
	value := func(s ir.Secret) ir.Secret { return s }
	again := func(s ir.Secret) ir.Secret { // the same data in other memory, as read anew
		s.Certificate, s.PrivateKey = slices.Clone(s.Certificate), slices.Clone(s.PrivateKey)
		return s
	}
	tests := []struct {
		name      string
		resolved  map[string]ir.Secret
		wantBase  bool
		wantCert  string // of "b" in the result
		wantFound bool
	}{
		{name: "nothing resolved again", resolved: nil, wantBase: true, wantCert: "bundle-b", wantFound: true},
		{name: "two resolved again with the same data", resolved: map[string]ir.Secret{"a": again(base[0]), "b": again(base[1])}, wantBase: true, wantCert: "bundle-b", wantFound: true},
		{name: "one of two with a new bundle", resolved: map[string]ir.Secret{"a": again(base[0]), "b": {Name: "b", Kind: ir.SecretCACertificate, Certificate: []byte("rotated")}}, wantCert: "rotated", wantFound: true},
		{name: "the same data as another kind", resolved: map[string]ir.Secret{"b": {Name: "b", Kind: ir.SecretGeneric, Certificate: []byte("bundle-b")}}, wantCert: "bundle-b", wantFound: true},
		{name: "a name the base lacks", resolved: map[string]ir.Secret{"z": {Name: "z"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := replaceByName(base, tt.resolved, name, value, (*ir.Secret).Equal)
			if ok != tt.wantFound {
				t.Fatalf("found = %v, want %v", ok, tt.wantFound)
			}
			if !ok {
				return
			}
			if isBase := &got[0] == &base[0]; isBase != tt.wantBase {
				t.Errorf("the base's own list: %v, want %v", isBase, tt.wantBase)
			}
			if string(got[1].Certificate) != tt.wantCert {
				t.Errorf("b's certificate = %q, want %q", got[1].Certificate, tt.wantCert)
			}
			if string(base[1].Certificate) != "bundle-b" || base[1].Kind != ir.SecretCACertificate {
				t.Errorf("the base's list was modified: b = %q, %s", base[1].Certificate, base[1].Kind)
			}
		})
	}
}

// TestBackendGatewaysCopiesBeforeItsFirstChange: patching the map of each Backend's
// Gateways leaves the shared map itself when every Backend keeps its Gateways (or, gone,
// had none), and otherwise works on a copy, so a Result handed out earlier never sees a
// later delta's change.
func TestBackendGatewaysCopiesBeforeItsFirstChange(t *testing.T) {
	shared := map[string][]string{"ns/a": {"gw/one"}, "ns/b": {"gw/one", "gw/two"}}
	tests := []struct {
		name     string
		set      map[string][]string
		wantSame bool
		want     map[string][]string
	}{
		{name: "every Backend keeps its Gateways", set: map[string][]string{"ns/a": {"gw/one"}, "ns/b": {"gw/one", "gw/two"}}, wantSame: true, want: shared},
		{name: "a Backend without Gateways stays without", set: map[string][]string{"ns/c": nil}, wantSame: true, want: shared},
		{name: "a Backend gains a Gateway", set: map[string][]string{"ns/a": {"gw/one", "gw/two"}}, want: map[string][]string{"ns/a": {"gw/one", "gw/two"}, "ns/b": {"gw/one", "gw/two"}}},
		{name: "a Backend loses its Gateways", set: map[string][]string{"ns/b": nil}, want: map[string][]string{"ns/a": {"gw/one"}}},
		{name: "a new Backend with a Gateway", set: map[string][]string{"ns/c": {"gw/two"}}, want: map[string][]string{"ns/a": {"gw/one"}, "ns/b": {"gw/one", "gw/two"}, "ns/c": {"gw/two"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := gatewaysOf(shared)
			for key, gws := range tt.set {
				g.set(key, gws)
			}
			got := g.done()
			if same := reflect.ValueOf(got).UnsafePointer() == reflect.ValueOf(shared).UnsafePointer(); same != tt.wantSame {
				t.Errorf("the shared map itself: %v, want %v", same, tt.wantSame)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if len(shared) != 2 || len(shared["ns/a"]) != 1 || len(shared["ns/b"]) != 2 {
				t.Errorf("the shared map was modified: %v", shared)
			}
		})
	}
	if got := gatewaysOf(map[string][]string{"ns/a": {"gw/one"}}); func() map[string][]string { got.set("ns/a", nil); return got.done() }() != nil {
		t.Error("a map left without entries is not nil")
	}
}

// TestRouteIDsAreTheBaseListWhenTheRoutesAreTheSame: the identities of HTTPRoutes that
// are the base's in the base's order are the base's own list; a route edited (a new
// generation), a route more or the same routes in another order give a new list, and a
// route without an identity gives none (no delta).
func TestRouteIDsAreTheBaseListWhenTheRoutesAreTheSame(t *testing.T) {
	route := func(uid string, generation int64) *gwapiv1.HTTPRoute {
		return &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid), Generation: generation}}
	}
	was, ok := kindIDs([]*gwapiv1.HTTPRoute{route("a", 1), route("b", 1)}, deltaHTTPRoutes)
	if !ok {
		t.Fatal("versioned routes have identities")
	}
	tests := []struct {
		name    string
		routes  []*gwapiv1.HTTPRoute
		wantWas bool
		wantOK  bool
	}{
		{name: "the same routes in the same order", routes: []*gwapiv1.HTTPRoute{route("a", 1), route("b", 1)}, wantWas: true, wantOK: true},
		{name: "a route edited", routes: []*gwapiv1.HTTPRoute{route("a", 1), route("b", 2)}, wantOK: true},
		{name: "the same routes in another order", routes: []*gwapiv1.HTTPRoute{route("b", 1), route("a", 1)}, wantOK: true},
		{name: "a route more", routes: []*gwapiv1.HTTPRoute{route("a", 1), route("b", 1), route("c", 1)}, wantOK: true},
		{name: "a route without a UID", routes: []*gwapiv1.HTTPRoute{route("a", 1), route("", 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := routeIDs(tt.routes, was)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			if isWas := &got[0] == &was[0]; isWas != tt.wantWas {
				t.Errorf("the base's own list: %v, want %v", isWas, tt.wantWas)
			}
			want, _ := kindIDs(tt.routes, deltaHTTPRoutes)
			if !slices.Equal(got, want) {
				t.Errorf("identities %v, want %v", got, want)
			}
		})
	}
}
