// Package v1alpha1 holds the egress.portcullis.io/v1alpha1 API: the Backend, an outside
// (or in-cluster) destination that HTTPRoutes may send traffic to through the gateway.
// +kubebuilder:object:generate=true
// +groupName=egress.portcullis.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "egress.portcullis.io", Version: "v1alpha1"}

	// SchemeBuilder registers the package's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the package's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// BackendKind is the kind an HTTPRoute backendRef names to reach a Backend.
const BackendKind = "Backend"
