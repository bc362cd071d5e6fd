package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ProtocolType is an application protocol the gateway speaks to a destination. The
// supported types are listed below; any other value, vendor-prefixed ones included, makes
// the Backend Accepted=False with reason UnsupportedProtocol.
type ProtocolType string

const (
	// ProtocolHTTP1 is HTTP/1.1 (the default).
	ProtocolHTTP1 ProtocolType = "HTTP1"
	// ProtocolHTTP2 is HTTP/2: negotiated by ALPN h2 over TLS, prior-knowledge h2c in plaintext.
	ProtocolHTTP2 ProtocolType = "HTTP2"
	// ProtocolGRPC is gRPC, carried over HTTP/2.
	ProtocolGRPC ProtocolType = "GRPC"
	// ProtocolWebSocket is HTTP/1.1 with WebSocket upgrades allowed.
	ProtocolWebSocket ProtocolType = "WebSocket"
	// ProtocolMCP is the Model Context Protocol: HTTP with streamed responses, no
	// buffering and a long idle timeout.
	ProtocolMCP ProtocolType = "MCP"
)

// SupportedProtocolTypes lists every ProtocolType the gateway implements, in the order
// status messages name them.
var SupportedProtocolTypes = []ProtocolType{ProtocolHTTP1, ProtocolHTTP2, ProtocolGRPC, ProtocolWebSocket, ProtocolMCP}

// BackendProtocol is the application protocol and its options.
type BackendProtocol struct {
	// type is HTTP1 (default), HTTP2, GRPC, WebSocket or MCP. Other values are accepted by
	// the API server but make the Backend Accepted=False with reason UnsupportedProtocol.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Type ProtocolType `json:"type"`

	// options are per-type settings, validated by the controller; an option the type does
	// not know makes the Backend Accepted=False with reason UnsupportedProtocol.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Options map[string]string `json:"options,omitempty"`
}

// Extension types the gateway implements.
const (
	ExtensionConnectionPool        = "portcullis.io/connection-pool"
	ExtensionCircuitBreaker        = "portcullis.io/circuit-breaker"
	ExtensionRequestHeaderModifier = "portcullis.io/request-header-modifier"
	ExtensionCredentialInjection   = "portcullis.io/credential-injection"
)

// BackendExtension is one per-destination behaviour and its configuration.
type BackendExtension struct {
	// type names the extension as a domain-prefixed path, e.g. portcullis.io/connection-pool.
	// An unknown type makes the Backend Accepted=False with reason UnsupportedExtension.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)+/[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.extensions[].type must be a domain-prefixed name such as portcullis.io/connection-pool"
	Type string `json:"type"`

	// config is the extension's settings. Its keys depend on type:
	//
	// portcullis.io/connection-pool: maxConnections, maxPendingRequests and maxRequests
	// (whole numbers of at least 1: connections opened to the destination, requests
	// waiting for a connection, requests in flight; beyond them requests fail at once with
	// 503; Envoy's default for each is 1024), timeout (how long a connection may take to
	// open, a duration such as 5s; default 10s) and idleTimeout (a connection idle this
	// long is closed, e.g. 60s).
	//
	// portcullis.io/circuit-breaker: failureThreshold (consecutive 5xx answers that eject
	// an address; default 5), interval (how often ejections are evaluated; default 10s),
	// baseEjectionTime (how long the first ejection lasts, longer each time again;
	// default 30s) and maxEjectionPercent (1 to 100, the share of addresses ejected at
	// once; default 10).
	//
	// portcullis.io/request-header-modifier: set (a list of {name, value} that replace
	// the header), add (a list of {name, value} appended to existing values) and remove
	// (a list of header names).
	//
	// portcullis.io/credential-injection: secretRef {name} and key (required: the Secret
	// in the Backend's namespace and its data key holding the credential), header
	// (default Authorization) and prefix (put before the value, e.g. "Bearer ").
	//
	// The API server stores config as written; the controller checks it. A key the type
	// does not know makes the Backend Accepted=False with reason UnsupportedExtension
	// naming the key; a bad value, reason Invalid naming the key.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Config *apiextensionsv1.JSON `json:"config,omitempty"`
}
