package controllers

// RBAC of the manager, generated into config/rbac/role.yaml by `make manifests`.
// Everything is cluster-wide because Gateways, routes and Backends live in any namespace.
//
// Inputs, read through informers:
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses;gateways;httproutes;tlsroutes;tcproutes;referencegrants;backendtlspolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=egress.portcullis.io,resources=backends,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services;namespaces,verbs=get;list;watch
// Pods are the callers of isolated Gateways (only their identity and IPs are kept):
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// The Gateway API's experimental XBackend, read (and its status written) only when its
// CRD is served (xbackend.go):
// +kubebuilder:rbac:groups=gateway.networking.x-k8s.io,resources=xbackends,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.x-k8s.io,resources=xbackends/status,verbs=get;update;patch
//
// Statuses the translator computes:
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses/status;gateways/status;httproutes/status;tlsroutes/status;tcproutes/status;backendtlspolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=egress.portcullis.io,resources=backends/status,verbs=get;update;patch
//
// Secrets and ConfigMaps: metadata watched cluster-wide, only referenced ones read; the
// xDS certificate manager creates and renews its Secrets (its own namespace, and one
// client Secret per Gateway namespace).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
//
// The Envoy fleet of each Gateway (kubernetes provider), owned by the Gateway:
// +kubebuilder:rbac:groups="",resources=serviceaccounts;services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways/finalizers,verbs=update
//
// Egress lockdown NetworkPolicies:
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
//
// Warning Events:
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
