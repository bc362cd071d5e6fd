package controllers

import (
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/controllers/status"
)

// sameWant tells whether two statuses translation made are the same, for
// verifiedStatuses: never true where reflect.DeepEqual is false (stricter only about
// time locations, which costs a merge check, not a missed write), and faster for the two
// kinds there are thousands of. After every translation each Backend's and each route's
// want is a new value equal to the last one, and reflect.DeepEqual on them was a fifth
// of the manager's CPU at 10,000 Backends and routes, most of it reflection. Every field
// is compared by name; TestSameWantNoticesEveryField changes each field reachable from
// the two types, one at a time, and fails when a field added to them is missed.
func sameWant(a, b any) bool {
	switch a := a.(type) {
	case *egressv1alpha1.BackendStatus:
		b, ok := b.(*egressv1alpha1.BackendStatus)
		return ok && sameBackendStatus(a, b)
	case []gwapiv1.RouteParentStatus:
		b, ok := b.([]gwapiv1.RouteParentStatus)
		return ok && sameRouteParents(a, b)
	}
	return reflect.DeepEqual(a, b)
}

// storedBackendStatus and storedRouteParents compare a verified want with a new one of
// the kind's own type (unverified).
func storedBackendStatus(stored any, want *egressv1alpha1.BackendStatus) bool {
	s, ok := stored.(*egressv1alpha1.BackendStatus)
	return ok && sameBackendStatus(s, want)
}

func storedRouteParents(stored any, want []gwapiv1.RouteParentStatus) bool {
	s, ok := stored.([]gwapiv1.RouteParentStatus)
	return ok && sameRouteParents(s, want)
}

func sameBackendStatus(a, b *egressv1alpha1.BackendStatus) bool {
	if a == nil || b == nil || a == b {
		return a == b
	}
	return sameConditions(a.Conditions, b.Conditions) && a.Destination == b.Destination && a.Ports == b.Ports &&
		sameSlices(a.Addresses, b.Addresses, sameVettedAddress) &&
		sameSlices(a.BlockedAddresses, b.BlockedAddresses, func(x, y *egressv1alpha1.BlockedAddress) bool { return *x == *y }) &&
		samePointers(a.EffectiveTLS, b.EffectiveTLS, sameEffectiveTLS)
}

func sameVettedAddress(a, b *egressv1alpha1.VettedAddress) bool {
	return a.IP == b.IP && samePointers(a.Since, b.Since, func(x, y *metav1.Time) bool { return x.Time == y.Time })
}

func sameEffectiveTLS(a, b *egressv1alpha1.EffectiveTLS) bool {
	return a.Source == b.Source && a.ServerName == b.ServerName && a.ClientCertificate == b.ClientCertificate &&
		samePointers(a.PolicyRef, b.PolicyRef, func(x, y *egressv1alpha1.PolicyReference) bool { return *x == *y })
}

func sameRouteParents(a, b []gwapiv1.RouteParentStatus) bool {
	return sameSlices(a, b, func(x, y *gwapiv1.RouteParentStatus) bool {
		return x.ControllerName == y.ControllerName && sameParentRef(&x.ParentRef, &y.ParentRef) && sameConditions(x.Conditions, y.Conditions)
	})
}

func sameParentRef(a, b *gwapiv1.ParentReference) bool {
	return a.Name == b.Name && sameValues(a.Group, b.Group) && sameValues(a.Kind, b.Kind) &&
		sameValues(a.Namespace, b.Namespace) && sameValues(a.SectionName, b.SectionName) && sameValues(a.Port, b.Port)
}

// sameConditions is status.ConditionsEqual (the fields the status merge reads) made
// exact as reflect.DeepEqual is: nil and empty lists differ, and so do transition times
// (two times are the same only with the same *time.Location, where DeepEqual would also
// compare two locations' contents). Two lists in the same memory are the same without
// a look at their contents: translation hands out the very conditions of a route it took
// from the Cache (its Result is read-only, and whoever changes a status copies it first),
// so after a change among ten thousand routes all but one compare this way.
func sameConditions(a, b []metav1.Condition) bool {
	if len(a) > 0 && len(a) == len(b) && &a[0] == &b[0] {
		return true
	}
	return (a == nil) == (b == nil) && status.ConditionsEqual(a, b) &&
		slices.EqualFunc(a, b, func(x, y metav1.Condition) bool { return x.LastTransitionTime.Time == y.LastTransitionTime.Time })
}

// sameSlices compares element by element; as for reflect.DeepEqual, nil and empty differ.
// Two slices in the same memory are the same, as for sameConditions: translation hands
// out a kept route side's statuses again (egress/translate/route_statuses.go).
func sameSlices[T any](a, b []T, same func(x, y *T) bool) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	if len(a) > 0 && &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if !same(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// samePointers is true for two nil pointers and for two whose targets are the same.
func samePointers[T any](a, b *T, same func(x, y *T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || same(a, b)
}

func sameValues[T comparable](a, b *T) bool {
	return samePointers(a, b, func(x, y *T) bool { return *x == *y })
}
