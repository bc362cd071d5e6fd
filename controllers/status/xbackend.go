package status

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
)

// MergeXBackendParents does for an XBackend's status.parents what MergeAncestors does
// for a policy's ancestors: other controllers' entries kept, ours replaced or dropped.
func MergeXBackendParents(stored, want []gwapixv1alpha1.BackendAncestorStatus, controller gwapiv1.GatewayController, now time.Time) []gwapixv1alpha1.BackendAncestorStatus {
	return mergeOwned(stored, want, xbackendParent(controller), now)
}

// XBackendParentsEqual compares parent lists ignoring transition times.
func XBackendParentsEqual(a, b []gwapixv1alpha1.BackendAncestorStatus) bool {
	return entriesEqual(a, b, xbackendParent(""))
}

func xbackendParent(controller gwapiv1.GatewayController) entryKind[gwapixv1alpha1.BackendAncestorStatus] {
	return entryKind[gwapixv1alpha1.BackendAncestorStatus]{
		ours:       func(a gwapixv1alpha1.BackendAncestorStatus) bool { return a.ControllerName == controller },
		controller: func(a gwapixv1alpha1.BackendAncestorStatus) gwapiv1.GatewayController { return a.ControllerName },
		ref:        func(a gwapixv1alpha1.BackendAncestorStatus) gwapiv1.ParentReference { return a.AncestorRef },
		conditions: func(a *gwapixv1alpha1.BackendAncestorStatus) *[]metav1.Condition { return &a.Conditions },
	}
}
