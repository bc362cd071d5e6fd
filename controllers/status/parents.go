package status

import (
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// MergeRouteParents returns an HTTPRoute's parents to store: other controllers' entries
// untouched, ours replaced by want (keeping transition times), and ours that want no
// longer has removed.
func MergeRouteParents(stored, want []gwapiv1.RouteParentStatus, controller gwapiv1.GatewayController, now time.Time) []gwapiv1.RouteParentStatus {
	return mergeOwned(stored, want, routeParent(controller), now)
}

// MergeAncestors does the same for a policy's ancestor statuses.
func MergeAncestors(stored, want []gwapiv1.PolicyAncestorStatus, controller gwapiv1.GatewayController, now time.Time) []gwapiv1.PolicyAncestorStatus {
	return mergeOwned(stored, want, policyAncestor(controller), now)
}

// RouteParentsEqual compares parent lists ignoring transition times.
func RouteParentsEqual(a, b []gwapiv1.RouteParentStatus) bool {
	return entriesEqual(a, b, routeParent(""))
}

// AncestorsEqual compares ancestor lists ignoring transition times.
func AncestorsEqual(a, b []gwapiv1.PolicyAncestorStatus) bool {
	return entriesEqual(a, b, policyAncestor(""))
}

// entryKind tells the generic merge how to read one kind of status entry.
type entryKind[T any] struct {
	ours       func(T) bool
	controller func(T) gwapiv1.GatewayController
	ref        func(T) gwapiv1.ParentReference
	conditions func(*T) *[]metav1.Condition
}

func routeParent(controller gwapiv1.GatewayController) entryKind[gwapiv1.RouteParentStatus] {
	return entryKind[gwapiv1.RouteParentStatus]{
		ours:       func(p gwapiv1.RouteParentStatus) bool { return p.ControllerName == controller },
		controller: func(p gwapiv1.RouteParentStatus) gwapiv1.GatewayController { return p.ControllerName },
		ref:        func(p gwapiv1.RouteParentStatus) gwapiv1.ParentReference { return p.ParentRef },
		conditions: func(p *gwapiv1.RouteParentStatus) *[]metav1.Condition { return &p.Conditions },
	}
}

func policyAncestor(controller gwapiv1.GatewayController) entryKind[gwapiv1.PolicyAncestorStatus] {
	return entryKind[gwapiv1.PolicyAncestorStatus]{
		ours:       func(a gwapiv1.PolicyAncestorStatus) bool { return a.ControllerName == controller },
		controller: func(a gwapiv1.PolicyAncestorStatus) gwapiv1.GatewayController { return a.ControllerName },
		ref:        func(a gwapiv1.PolicyAncestorStatus) gwapiv1.ParentReference { return a.AncestorRef },
		conditions: func(a *gwapiv1.PolicyAncestorStatus) *[]metav1.Condition { return &a.Conditions },
	}
}

func mergeOwned[T any](stored, want []T, k entryKind[T], now time.Time) []T {
	var out []T
	for _, e := range stored {
		if !k.ours(e) {
			out = append(out, e)
		}
	}
	for _, e := range want {
		var old []metav1.Condition
		for _, s := range stored {
			if k.ours(s) && reflect.DeepEqual(k.ref(s), k.ref(e)) {
				old = *k.conditions(&s)
			}
		}
		*k.conditions(&e) = MergeConditions(old, *k.conditions(&e), now)
		out = append(out, e)
	}
	return out
}

func entriesEqual[T any](a, b []T, k entryKind[T]) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if k.controller(a[i]) != k.controller(b[i]) || !reflect.DeepEqual(k.ref(a[i]), k.ref(b[i])) || !ConditionsEqual(*k.conditions(&a[i]), *k.conditions(&b[i])) {
			return false
		}
	}
	return true
}
