package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackendStatus is what the controller observed and did about a Backend.
type BackendStatus struct {
	// conditions are Accepted, ResolvedRefs, AddressesResolved (FQDN and ExternalName
	// destinations only) and Programmed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// destination summarises spec.destination for `kubectl get` (hostname, address or
	// Service name).
	// +optional
	Destination string `json:"destination,omitempty"`

	// ports summarises spec.destination.ports for `kubectl get`, e.g. "443/HTTPS".
	// +optional
	Ports string `json:"ports,omitempty"`

	// addresses are the vetted addresses Envoy may connect to. The DNS guard re-resolves
	// the name when its TTL (clamped to the guard's minimum and maximum) runs out; the list
	// is rewritten only when the set of addresses changes, not at every refresh. Whether
	// the answers are current is the AddressesResolved condition's job: it turns Stale
	// while resolution fails and the last addresses are still used.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Addresses []VettedAddress `json:"addresses,omitempty"`

	// blockedAddresses are answers the DNS guard refused, with the reason.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	BlockedAddresses []BlockedAddress `json:"blockedAddresses,omitempty"`

	// effectiveTLS is the TLS configuration in force after merging inline TLS with any
	// BackendTLSPolicy. Absent when the gateway does not originate TLS.
	// +optional
	EffectiveTLS *EffectiveTLS `json:"effectiveTLS,omitempty"`
}

// VettedAddress is an address that passed the DNS guard.
type VettedAddress struct {
	// ip is the vetted address.
	// +required
	IP string `json:"ip"`
	// since is when the DNS guard first vetted this address in the run of answers that
	// has held it ever since (a refresh returning it again keeps the time; a manager
	// restart starts a new run). Absent for literal IPs.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// BlockedAddress is an answer the DNS guard refused.
type BlockedAddress struct {
	// ip is the refused address.
	// +required
	IP string `json:"ip"`
	// reason says which policy refused it, e.g. "private (10.0.0.0/8)".
	// +required
	Reason string `json:"reason"`
}

// TLSSource says where the effective server verification comes from.
// +kubebuilder:validation:Enum=Inline;BackendTLSPolicy;System;Insecure
type TLSSource string

const (
	// TLSSourceInline is the Backend's own caCertificates.
	TLSSourceInline TLSSource = "Inline"
	// TLSSourceBackendTLSPolicy is a BackendTLSPolicy targeting the Service.
	TLSSourceBackendTLSPolicy TLSSource = "BackendTLSPolicy"
	// TLSSourceSystem is the System trust store.
	TLSSourceSystem TLSSource = "System"
	// TLSSourceInsecure means verification is off (insecureSkipVerify).
	TLSSourceInsecure TLSSource = "Insecure"
)

// EffectiveTLS is the TLS configuration in force for a Backend.
type EffectiveTLS struct {
	// source is where server verification comes from.
	// +required
	Source TLSSource `json:"source"`
	// policyRef names the BackendTLSPolicy in force, when source is BackendTLSPolicy.
	// +optional
	PolicyRef *PolicyReference `json:"policyRef,omitempty"`
	// serverName is the SNI sent.
	// +optional
	ServerName string `json:"serverName,omitempty"`
	// clientCertificate is the name of the Secret whose certificate is presented, if any.
	// +optional
	ClientCertificate string `json:"clientCertificate,omitempty"`
}

// PolicyReference names a policy object.
type PolicyReference struct {
	// namespace of the policy.
	// +required
	Namespace string `json:"namespace"`
	// name of the policy.
	// +required
	Name string `json:"name"`
}
