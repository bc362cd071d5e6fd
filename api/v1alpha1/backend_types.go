package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Backend declares one destination that HTTPRoutes attached to a Portcullis Gateway may
// send traffic to: an outside DNS name, a literal IP address or a Service in the same
// namespace, together with how the gateway connects to it (TLS, protocol) and what it
// does to every request on the way (extensions).
//
// `kubectl get backends` shows one column per condition (Accepted, Refs, Addresses,
// Programmed) and, under Reason, the reason of the first condition that is False: a
// Backend is in use only when no condition is False.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pbk,categories=portcullis
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.destination.type`
// +kubebuilder:printcolumn:name="Destination",type=string,JSONPath=`.status.destination`,description="The hostname, IP address or Service the Backend sends to"
// +kubebuilder:printcolumn:name="Ports",type=string,JSONPath=`.status.ports`,description="The destination ports and their protocols"
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`,description="Whether the spec is valid and allowed (condition Accepted)"
// +kubebuilder:printcolumn:name="Refs",type=string,JSONPath=`.status.conditions[?(@.type=="ResolvedRefs")].status`,description="Whether every referenced Secret, ConfigMap and Service is usable (condition ResolvedRefs)"
// +kubebuilder:printcolumn:name="Addresses",type=string,JSONPath=`.status.conditions[?(@.type=="AddressesResolved")].status`,description="Whether the DNS guard vetted an address (condition AddressesResolved; FQDN and ExternalName destinations only)"
// +kubebuilder:printcolumn:name="Programmed",type=string,JSONPath=`.status.conditions[?(@.type=="Programmed")].status`,description="Whether Envoy runs this Backend's configuration (condition Programmed)"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.status=="False")].reason`,description="The reason of the first condition that is False; kubectl describe shows its message"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Backend struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the destination and how to connect to it.
	// +required
	Spec BackendSpec `json:"spec"`

	// status is written by the Portcullis controller: whether the Backend is accepted,
	// which addresses the DNS guard vetted or blocked, which TLS settings are in force and
	// whether Envoy accepted the configuration.
	// +optional
	Status BackendStatus `json:"status,omitzero"`
}

// BackendSpec is the desired state of a Backend.
type BackendSpec struct {
	// destination says where traffic goes: exactly one of fqdn, ip or kubernetesService,
	// matching type, and the ports it listens on.
	// +required
	Destination BackendDestination `json:"destination"`

	// extensions apply to every request sent to this Backend, after the route's filters,
	// in the order listed. Supported types: portcullis.io/connection-pool,
	// portcullis.io/circuit-breaker, portcullis.io/request-header-modifier and
	// portcullis.io/credential-injection. Each type may appear once.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(e, self.exists_one(f, f.type == e.type))",message="each extension type may appear only once in spec.extensions; merge the configs into one entry"
	Extensions []BackendExtension `json:"extensions,omitempty"`
}

// BackendList is a list of Backends.
//
// +kubebuilder:object:root=true
type BackendList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Backend `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Backend{}, &BackendList{})
}
