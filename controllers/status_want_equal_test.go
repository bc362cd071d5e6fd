package controllers

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

func wantBackend() *egressv1alpha1.BackendStatus {
	return &egressv1alpha1.BackendStatus{
		Conditions: []metav1.Condition{
			{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "accepted", ObservedGeneration: 2},
			{Type: "Programmed", Status: metav1.ConditionFalse, Reason: "Pending", Message: "waiting for Envoy", ObservedGeneration: 2},
		},
		Destination: "api.example.com",
		Ports:       "443/HTTPS",
		Addresses:   []egressv1alpha1.VettedAddress{{IP: "192.0.2.1"}},
	}
}

func wantParents() []gwapiv1.RouteParentStatus {
	return []gwapiv1.RouteParentStatus{{
		ParentRef:      gwapiv1.ParentReference{Name: "egress", Namespace: ptr.To(gwapiv1.Namespace("gw")), SectionName: ptr.To(gwapiv1.SectionName("http"))},
		ControllerName: "portcullis.io/gateway",
		Conditions:     []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "attached", ObservedGeneration: 1}},
	}}
}

// TestSameWantAgreesWithDeepEqual: the typed comparison says "same" exactly where
// reflect.DeepEqual does, for a change in each part of the two hot status kinds and for
// the kinds it leaves to reflection.
func TestSameWantAgreesWithDeepEqual(t *testing.T) {
	backend := func(edit func(*egressv1alpha1.BackendStatus)) *egressv1alpha1.BackendStatus {
		s := wantBackend()
		edit(s)
		return s
	}
	parents := func(edit func([]gwapiv1.RouteParentStatus) []gwapiv1.RouteParentStatus) []gwapiv1.RouteParentStatus {
		return edit(wantParents())
	}
	same, sameParents := wantBackend(), wantParents()
	longer := append(wantParents(), wantParents()...)
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"the same Backend status value", same, same, true},
		{"two equal Backend statuses", wantBackend(), wantBackend(), true},
		{"a condition's message differs", wantBackend(), backend(func(s *egressv1alpha1.BackendStatus) { s.Conditions[1].Message = "other" }), false},
		{"a condition's reason differs", wantBackend(), backend(func(s *egressv1alpha1.BackendStatus) { s.Conditions[1].Reason = "Other" }), false},
		{"a condition's status differs", wantBackend(), backend(func(s *egressv1alpha1.BackendStatus) { s.Conditions[1].Status = metav1.ConditionTrue }), false},
		{"a condition's type differs", wantBackend(), backend(func(s *egressv1alpha1.BackendStatus) { s.Conditions[0].Type = "Other" }), false},
		{"a condition's generation differs", wantBackend(), backend(func(s *egressv1alpha1.BackendStatus) { s.Conditions[0].ObservedGeneration = 3 }), false},
		{"a condition's transition time differs", wantBackend(), backend(func(s *egressv1alpha1.BackendStatus) {
			s.Conditions[0].LastTransitionTime = metav1.NewTime(time.Unix(1, 0))
		}), false},
		{"a condition fewer", wantBackend(), backend(func(s *egressv1alpha1.BackendStatus) { s.Conditions = s.Conditions[:1] }), false},
		{"no conditions against an empty list", backend(func(s *egressv1alpha1.BackendStatus) { s.Conditions = nil }),
			backend(func(s *egressv1alpha1.BackendStatus) { s.Conditions = []metav1.Condition{} }), false},
		{"an address differs", wantBackend(), backend(func(s *egressv1alpha1.BackendStatus) { s.Addresses[0].IP = "192.0.2.2" }), false},
		{"the destination summary differs", wantBackend(), backend(func(s *egressv1alpha1.BackendStatus) { s.Destination = "other" }), false},
		{"a nil Backend status against one", (*egressv1alpha1.BackendStatus)(nil), wantBackend(), false},
		{"two equal route parent lists", wantParents(), wantParents(), true},
		{"the same route parent list", sameParents, sameParents, true},
		{"the start of a longer parent list, in its memory", longer[:1], longer, false},
		{"a parent's condition differs", wantParents(), parents(func(p []gwapiv1.RouteParentStatus) []gwapiv1.RouteParentStatus {
			p[0].Conditions[0].Message = "other"
			return p
		}), false},
		{"a parent's section differs", wantParents(), parents(func(p []gwapiv1.RouteParentStatus) []gwapiv1.RouteParentStatus {
			p[0].ParentRef.SectionName = ptr.To(gwapiv1.SectionName("https"))
			return p
		}), false},
		{"a parent's controller differs", wantParents(), parents(func(p []gwapiv1.RouteParentStatus) []gwapiv1.RouteParentStatus {
			p[0].ControllerName = "other.io/gateway"
			return p
		}), false},
		{"a parent more", wantParents(), parents(func(p []gwapiv1.RouteParentStatus) []gwapiv1.RouteParentStatus { return append(p, p[0]) }), false},
		{"no parents against an empty list", []gwapiv1.RouteParentStatus(nil), []gwapiv1.RouteParentStatus{}, false},
		{"a Backend status against route parents", wantBackend(), wantParents(), false},
		{"other kinds go through reflection: equal", &gwapiv1.GatewayStatus{Listeners: []gwapiv1.ListenerStatus{{Name: "http"}}},
			&gwapiv1.GatewayStatus{Listeners: []gwapiv1.ListenerStatus{{Name: "http"}}}, true},
		{"other kinds go through reflection: different", &gwapiv1.GatewayStatus{Listeners: []gwapiv1.ListenerStatus{{Name: "http"}}},
			&gwapiv1.GatewayStatus{Listeners: []gwapiv1.ListenerStatus{{Name: "https"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameWant(tt.a, tt.b); got != tt.want {
				t.Errorf("sameWant = %v, want %v", got, tt.want)
			}
			if deep := reflect.DeepEqual(tt.a, tt.b); deep != tt.want {
				t.Errorf("reflect.DeepEqual = %v: the case does not say what it means to", deep)
			}
		})
	}
}

// TestSameWantNoticesEveryField fills a Backend status and a route's parent statuses
// in every field, then changes each field reachable from them (a string, a number, a
// time, a pointer or list set to nil) in a copy, one at a time: sameWant must tell each
// copy from the original. A field added to these types that sameWant does not compare
// fails here.
func TestSameWantNoticesEveryField(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[*egressv1alpha1.BackendStatus](), reflect.TypeFor[[]gwapiv1.RouteParentStatus]()} {
		filled := func() reflect.Value {
			v := reflect.New(typ).Elem()
			fillWant(t, v)
			return v
		}
		base := filled()
		if !sameWant(base.Interface(), filled().Interface()) {
			t.Fatalf("%v: two values filled alike are not the same", typ)
		}
		var paths []string
		visitWant(base, "", func(path string, _ reflect.Value) { paths = append(paths, path) })
		for _, path := range paths {
			changed := filled()
			visitWant(changed, "", func(p string, v reflect.Value) {
				if p == path {
					changeWant(v)
				}
			})
			if reflect.DeepEqual(base.Interface(), changed.Interface()) {
				continue // a struct: changed through its fields
			}
			if sameWant(base.Interface(), changed.Interface()) {
				t.Errorf("%v: a change of %s is not noticed", typ, path)
			}
		}
		t.Logf("%v: %d fields changed one at a time", typ, len(paths))
	}
}

var timeType = reflect.TypeFor[time.Time]()

// fillWant sets every field reachable from v: pointers get a target, lists one element.
func fillWant(t *testing.T, v reflect.Value) {
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Unix(100, 0)))
	case v.Kind() == reflect.String:
		v.SetString("s")
	case v.CanInt():
		v.SetInt(1)
	case v.Kind() == reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillWant(t, v.Elem())
	case v.Kind() == reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillWant(t, v.Index(0))
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			fillWant(t, v.Field(i))
		}
	default:
		t.Fatalf("fillWant: %v (%v) is not handled: teach the test and sameWant", v.Type(), v.Kind())
	}
}

// visitWant calls visit with every value reachable from v and its path.
func visitWant(v reflect.Value, path string, visit func(path string, v reflect.Value)) {
	visit(path, v)
	switch {
	case v.Type() == timeType:
	case v.Kind() == reflect.Pointer && !v.IsNil():
		visitWant(v.Elem(), path+"*", visit)
	case v.Kind() == reflect.Slice && v.Len() > 0:
		visitWant(v.Index(0), path+"[0]", visit)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			visitWant(v.Field(i), path+"."+v.Type().Field(i).Name, visit)
		}
	}
}

// changeWant changes a leaf, or sets a pointer or list to nil; structs are left alone.
func changeWant(v reflect.Value) {
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Second)))
	case v.Kind() == reflect.String:
		v.SetString(v.String() + "x")
	case v.CanInt():
		v.SetInt(v.Int() + 1)
	case v.Kind() == reflect.Pointer, v.Kind() == reflect.Slice:
		v.SetZero()
	}
}
