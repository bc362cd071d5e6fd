package translate

import (
	"path/filepath"
	"reflect"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// TestNilEntriesAreSkipped: a nil Backend or HTTPRoute among those Resources holds by
// pointer translates as if it were not there, and a list without one is handed on as
// the very list (the Cache recognises a list handed out again by its memory).
func TestNilEntriesAreSkipped(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "tenant-isolation.in.yaml"))
	want := Translate(res.DeepCopy(), addrs, opts)
	tests := []struct {
		name string
		add  func(*egress.Resources)
	}{
		{"a nil Backend first", func(r *egress.Resources) {
			r.Backends = append([]*egressv1alpha1.Backend{nil}, r.Backends...)
		}},
		{"a nil HTTPRoute last", func(r *egress.Resources) { r.HTTPRoutes = append(r.HTTPRoutes, nil) }},
		{"nil entries of both kinds between others", func(r *egress.Resources) {
			r.Backends = append(r.Backends[:1:1], append([]*egressv1alpha1.Backend{nil}, r.Backends[1:]...)...)
			r.HTTPRoutes = append(r.HTTPRoutes[:1:1], append([]*gwapiv1.HTTPRoute{nil, nil}, r.HTTPRoutes[1:]...)...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := res.DeepCopy()
			tt.add(in)
			if got := Translate(in, addrs, opts); !reflect.DeepEqual(got, want) {
				t.Errorf("translation with nil entries differs:\n%s\nwant:\n%s", renderResult(t, got), renderResult(t, want))
			}
		})
	}
	clean := res.DeepCopy()
	if got := withoutNilEntries(clean); got != clean {
		t.Error("Resources without a nil entry were copied")
	}
	withNil := res.DeepCopy()
	withNil.HTTPRoutes = append(withNil.HTTPRoutes, nil)
	got := withoutNilEntries(withNil)
	if len(got.Backends) == 0 || &got.Backends[0] != &withNil.Backends[0] {
		t.Error("the Backends, without a nil entry, are not the very list")
	}
}
