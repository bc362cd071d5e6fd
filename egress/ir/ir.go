// Package ir is the small, plain intermediate representation between the translator and
// the Envoy builders: what one Envoy fleet (one Gateway) must serve, with every name,
// address and secret already resolved. It holds no Kubernetes or Envoy types so that
// both sides can be tested with golden files (sigs.k8s.io/yaml, json tags).
//
// Invariants the translator guarantees and the builders rely on:
//   - every slice is sorted in a deterministic order (listeners by port, virtual hosts by
//     name, clusters and secrets by name; routes are in match-precedence order);
//   - every cluster a route names exists in Clusters, and every secret a cluster or
//     listener names exists in Secrets;
//   - an FQDN cluster's endpoints are only addresses the DNS guard vetted.
package ir

import (
	"bytes"
	"strings"
	"time"
)

// Gateway is everything one Envoy fleet serves. Name is "<namespace>/<name>", the xDS
// node.cluster of that fleet.
//
// Clusters are pointers: a cluster is shared by every Gateway that routes to it and by
// the translations that reuse it, and a Gateway's list after a one-Backend change is the
// last list with one pointer replaced (copying 10,000 clusters of 168 bytes was half of
// what such a change allocated, 2026-12-03). Never modify a cluster a Gateway holds:
// copy it, change the copy, and put the copy in a copy of the list.
type Gateway struct {
	Name      string     `json:"name"`
	Listeners []Listener `json:"listeners,omitempty"`
	Clusters  []*Cluster `json:"clusters,omitempty"`
	Secrets   []Secret   `json:"secrets,omitempty"`
}

// Listener is one Envoy listener: every Gateway listener on the same port shares it.
type Listener struct {
	// Name is unique within the Gateway, e.g. "http-10080".
	Name string `json:"name"`
	// Port is the port Envoy binds (a Gateway port below 1024 is bound at port+10000).
	Port uint32 `json:"port"`
	// TLS terminates TLS from clients; nil for plaintext HTTP.
	TLS *ListenerTLS `json:"tls,omitempty"`
	// VirtualHosts route by Host header. Their route configuration is named after the listener.
	// On an isolated listener they serve only unrestricted callers (see Caller).
	VirtualHosts []VirtualHost `json:"virtualHosts,omitempty"`
	// Isolated serves each caller only the routes of its own namespace and the routes
	// that admit it (Tenants); a caller Envoy cannot identify gets 403.
	Isolated bool `json:"isolated,omitempty"`
	// Tenants are the route tables of an isolated listener, one per caller namespace
	// that has routes, sorted by namespace.
	Tenants []Tenant `json:"tenants,omitempty"`
	// Callers are the source addresses Envoy knows, sorted by prefix. The translator
	// fills them from Pods; the reconciler replaces them when only Pods changed.
	Callers []Caller `json:"callers,omitempty"`
	// AccessLog writes one JSON line per request (the audit log).
	AccessLog bool `json:"accessLog,omitempty"`
	// ForwardProxy also serves HTTP CONNECT: a virtual host's Tunnels are the only
	// authorities a caller may open a tunnel to; every other CONNECT gets 403.
	ForwardProxy bool `json:"forwardProxy,omitempty"`
	// Kind is what the listener carries: HTTP (empty) or connections passed through
	// whole (TLS passthrough picked by SNI, or TCP). A stream listener has Streams
	// (and, isolated, its Tenants have Streams) instead of virtual hosts.
	Kind ListenerKind `json:"kind,omitempty"`
	// Streams are the routes of a stream listener for unrestricted callers, or for every
	// caller when not isolated, in the order their server names take precedence.
	Streams []StreamRoute `json:"streams,omitempty"`
}

// ListenerKind is what a listener carries.
type ListenerKind string

const (
	// ListenerHTTP terminates HTTP (the zero value).
	ListenerHTTP ListenerKind = ""
	// ListenerTLSPassthrough reads the ClientHello's SNI and passes the connection,
	// TLS untouched, to the route that claims that name (TLSRoute).
	ListenerTLSPassthrough ListenerKind = "TLSPassthrough"
	// ListenerTCP passes every connection to the one route of its table (TCPRoute).
	ListenerTCP ListenerKind = "TCP"
)

// StreamRoute sends whole connections to clusters (TCP, no TLS originated).
type StreamRoute struct {
	// Name identifies the route in logs and stats: "<kind>/<ns>/<name>", kind being
	// "tlsroute" or "tcproute".
	Name string `json:"name"`
	// ServerNames are the SNI values this route takes on a TLS passthrough listener,
	// exact or "*." wildcards; "*" takes every name, and a ClientHello without one. On a
	// TCP listener it is ["*"].
	ServerNames []string `json:"serverNames"`
	// Backends receive connections in proportion to their weights; none: every
	// connection is closed (no backendRef of the route could be used).
	Backends []WeightedCluster `json:"backends,omitempty"`
	// InvalidWeight is the share of connections whose backendRef was invalid: they are
	// closed at once, as Gateway API asks of that share.
	InvalidWeight uint32 `json:"invalidWeight,omitempty"`
}

// Tenant is the route table of callers from one namespace.
type Tenant struct {
	Namespace string `json:"namespace"`
	// VirtualHosts hold the routes of Namespace and the routes whose namespace admits
	// it, in the same precedence order as the listener's shared table.
	VirtualHosts []VirtualHost `json:"virtualHosts,omitempty"`
	// Streams are the same for a stream listener.
	Streams []StreamRoute `json:"streams,omitempty"`
}

// Caller is a source address and who sends from it: a pod's IP, or a range of
// unrestricted callers (local mode's own machine) that see every route.
type Caller struct {
	// Prefix is an address range in CIDR form, "10.244.0.7/32" for a pod.
	Prefix         string `json:"prefix"`
	Namespace      string `json:"namespace,omitempty"`
	Pod            string `json:"pod,omitempty"`
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// Unrestricted callers are served the listener's shared table (VirtualHosts).
	Unrestricted bool `json:"unrestricted,omitempty"`
}

// ListenerTLS is downstream TLS. Envoy picks the certificate by SNI among them.
type ListenerTLS struct {
	// CertificateSecrets are names of Secrets (Kind TLSCertificate) served by SDS.
	CertificateSecrets []string `json:"certificateSecrets"`
}

// VirtualHost serves a set of Host header values.
type VirtualHost struct {
	Name string `json:"name"`
	// Domains are Host values, possibly with a leading "*." wildcard; "*" matches any.
	Domains []string `json:"domains"`
	Routes  []Route  `json:"routes,omitempty"`
	// Tunnels are the ports a CONNECT to this virtual host's (single, exact) domain may
	// open, sorted by port; only on a ForwardProxy listener.
	Tunnels []Tunnel `json:"tunnels,omitempty"`
}

// Tunnel is one CONNECT authority ("<domain>:<port>") a caller may open: the bytes go
// to Cluster (TCP, no TLS originated), or, when NoAddress, the CONNECT gets 403
// because the DNS guard vetted no address for the name.
type Tunnel struct {
	Port    uint32 `json:"port"`
	Cluster string `json:"cluster"`
	// NoAddress: the Backend has no vetted address now; refused rather than a 503, so
	// that a refused name and an unknown one look the same to the caller.
	NoAddress bool `json:"noAddress,omitempty"`
}

// Route is one HTTPRoute rule match with its filters and destination.
// Exactly one of Redirect, DirectResponse and Backends decides the outcome.
type Route struct {
	// Name identifies the route for logs and stats: "<ns>/<route>/rule/<i>/match/<j>".
	Name  string     `json:"name"`
	Match RouteMatch `json:"match"`

	RequestHeaders  *HeaderMutation `json:"requestHeaders,omitempty"`
	ResponseHeaders *HeaderMutation `json:"responseHeaders,omitempty"`
	Rewrite         *URLRewrite     `json:"rewrite,omitempty"`

	Redirect       *Redirect       `json:"redirect,omitempty"`
	DirectResponse *DirectResponse `json:"directResponse,omitempty"`
	// Backends receive the traffic in proportion to their weights.
	Backends []WeightedCluster `json:"backends,omitempty"`
	// InvalidWeight is the share of traffic whose backendRef was invalid: it gets HTTP 500
	// (Gateway API: the matching share of requests fails).
	InvalidWeight uint32 `json:"invalidWeight,omitempty"`
	// Timeouts are the rule's HTTPRoute timeouts; nil keeps the protocol's default.
	Timeouts *RouteTimeouts `json:"timeouts,omitempty"`
	// Retry is the rule's HTTPRoute retry; nil: no retry.
	Retry *Retry `json:"retry,omitempty"`
	// Mirrors receive a copy of a share of the requests; their answers are dropped.
	Mirrors []Mirror `json:"mirrors,omitempty"`
}

// Mirror sends a copy of Numerator/Denominator of the requests to Cluster.
type Mirror struct {
	Cluster     string `json:"cluster"`
	Numerator   uint32 `json:"numerator"`
	Denominator uint32 `json:"denominator"`
}

// Retry resends a request to the Backend when its answer has one of Codes, or when no
// connection could be made to it (nothing reached the Backend, so nothing is done twice).
type Retry struct {
	Codes []uint32 `json:"codes,omitempty"`
	// Attempts is how many times a request may be retried (so Attempts+1 tries at most).
	Attempts uint32 `json:"attempts"`
	// Backoff is the least time between tries; Envoy's 25 ms when nil.
	Backoff *time.Duration `json:"backoff,omitempty"`
}

// RouteTimeouts bound a request. A nil field is not set; a zero duration turns that
// timeout off (Gateway API: "0s" disables it).
type RouteTimeouts struct {
	// Request bounds the whole request, from the end of the client's request to the end
	// of the response.
	Request *time.Duration `json:"request,omitempty"`
	// BackendRequest bounds each request to the Backend (every attempt).
	BackendRequest *time.Duration `json:"backendRequest,omitempty"`
}

// PathMatchType is how a request path is matched.
type PathMatchType string

const (
	PathExact  PathMatchType = "Exact"
	PathPrefix PathMatchType = "PathPrefix"
	PathRegex  PathMatchType = "RegularExpression"
)

// StringMatchType is how a header or query value is matched.
type StringMatchType string

const (
	MatchExact StringMatchType = "Exact"
	MatchRegex StringMatchType = "RegularExpression"
)

// RouteMatch is the conjunction of every condition set.
type RouteMatch struct {
	PathType PathMatchType `json:"pathType"`
	// Path is the path, prefix or RE2 regex. A prefix matches whole path segments.
	Path        string       `json:"path"`
	Headers     []ValueMatch `json:"headers,omitempty"`
	QueryParams []ValueMatch `json:"queryParams,omitempty"`
	// Method is an HTTP method, or empty for any.
	Method string `json:"method,omitempty"`
}

// ValueMatch matches one header or query parameter.
type ValueMatch struct {
	Name  string          `json:"name"`
	Type  StringMatchType `json:"type"`
	Value string          `json:"value"`
}

// HeaderMutation sets, adds and removes headers.
type HeaderMutation struct {
	// Set overwrites the header.
	Set []Header `json:"set,omitempty"`
	// Add appends a value, keeping existing ones.
	Add []Header `json:"add,omitempty"`
	// Remove deletes headers by name.
	Remove []string `json:"remove,omitempty"`
}

// Header is a name and value.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// URLRewrite rewrites the Host header and/or the path before forwarding.
type URLRewrite struct {
	Hostname string `json:"hostname,omitempty"`
	// FullPath replaces the whole path; PrefixPath replaces the matched prefix.
	FullPath   *string `json:"fullPath,omitempty"`
	PrefixPath *string `json:"prefixPath,omitempty"`
}

// Redirect answers with an HTTP redirect.
type Redirect struct {
	Scheme     string  `json:"scheme,omitempty"`
	Hostname   string  `json:"hostname,omitempty"`
	Port       uint32  `json:"port,omitempty"`
	FullPath   *string `json:"fullPath,omitempty"`
	PrefixPath *string `json:"prefixPath,omitempty"`
	// StatusCode is 301, 302, 303, 307 or 308.
	StatusCode int `json:"statusCode"`
}

// BackendUnavailable starts the one-line body of a 500 that answers for a backendRef
// that cannot be used: "backend not available: " and what kind of problem it is.
const BackendUnavailable = "backend not available"

// DirectResponse answers without an upstream (e.g. 500 when every backendRef is invalid).
type DirectResponse struct {
	StatusCode int    `json:"statusCode"`
	Body       string `json:"body,omitempty"`
}

// WeightedCluster is one destination of a route and its share of traffic.
type WeightedCluster struct {
	Cluster string `json:"cluster"`
	Weight  uint32 `json:"weight"`
	// RequestHeaders are the backendRef's own RequestHeaderModifier filter.
	RequestHeaders *HeaderMutation `json:"requestHeaders,omitempty"`
}

// Cluster is one (Backend, port) or (Service, port) destination.
type Cluster struct {
	// Name is "backend/<ns>/<name>/<port name>", "service/<ns>/<name>/<port number>" or,
	// for a CONNECT tunnel, "tunnel/<ns>/<name>/<port name>".
	Name string `json:"name"`
	// Origin is the Backend or Service (and port) the cluster sends to, for stats and
	// access logs.
	Origin ClusterOrigin `json:"origin"`
	// Endpoints are the only addresses Envoy may connect to (served by EDS).
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// Protocol is the application protocol spoken upstream.
	Protocol UpstreamProtocol `json:"protocol"`
	// TLS originates TLS; nil sends plaintext.
	TLS *UpstreamTLS `json:"tls,omitempty"`

	// ConnectTimeout is the TCP connect timeout (default 10s).
	ConnectTimeout time.Duration `json:"connectTimeout,omitempty"`
	// IdleTimeout closes idle upstream connections (0: Envoy's default).
	IdleTimeout time.Duration `json:"idleTimeout,omitempty"`

	CircuitBreaker  *CircuitBreaker   `json:"circuitBreaker,omitempty"`
	OutlierDetector *OutlierDetection `json:"outlierDetection,omitempty"`

	// RequestHeaders are the Backend's request-header-modifier extension, applied to every
	// request sent to this cluster, after route filters.
	RequestHeaders *HeaderMutation `json:"requestHeaders,omitempty"`
	// Credential is injected into every request sent to this cluster; its value is only
	// in the named secret, served by SDS.
	Credential *Credential `json:"credential,omitempty"`
}

// ClusterOrigin names the object behind a cluster.
type ClusterOrigin struct {
	// Kind is OriginBackend or OriginService.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Port is the port number: the Backend port's, or the Service port.
	Port uint32 `json:"port"`
}

// Kinds of ClusterOrigin.
const (
	OriginBackend = "Backend"
	OriginService = "Service"
)

// UpstreamProtocol is the HTTP flavour spoken to a cluster.
type UpstreamProtocol string

const (
	// ProtocolHTTP1 is HTTP/1.1.
	ProtocolHTTP1 UpstreamProtocol = "HTTP1"
	// ProtocolHTTP2 is HTTP/2: over TLS with ALPN h2, in plaintext with prior knowledge (h2c).
	ProtocolHTTP2 UpstreamProtocol = "HTTP2"
	// ProtocolGRPC is gRPC: HTTP/2 as above.
	ProtocolGRPC UpstreamProtocol = "GRPC"
	// ProtocolWebSocket is HTTP/1.1 with the websocket upgrade allowed on routes to it.
	ProtocolWebSocket UpstreamProtocol = "WebSocket"
	// ProtocolMCP is HTTP/1.1 with streamed responses: no buffering, idle timeout of an hour.
	ProtocolMCP UpstreamProtocol = "MCP"
	// ProtocolTCP is raw bytes: the cluster of a CONNECT tunnel, which never speaks HTTP
	// upstream and never originates TLS (the client's TLS goes end to end).
	ProtocolTCP UpstreamProtocol = "TCP"
)

// Endpoint is one address Envoy may connect to.
type Endpoint struct {
	Address string `json:"address"`
	Port    uint32 `json:"port"`
}

// UpstreamTLS is TLS originated by Envoy.
type UpstreamTLS struct {
	// SNI is sent in the ClientHello; empty sends none.
	SNI string `json:"sni,omitempty"`
	// Verification: exactly one of CASecret (a Secret of Kind CACertificate, by SDS),
	// SystemCA (the trust store file given to the builders) and InsecureSkipVerify.
	CASecret           string `json:"caSecret,omitempty"`
	SystemCA           bool   `json:"systemCA,omitempty"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty"`
	// SubjectAltNames the server certificate must carry (any one); when empty and SNI is
	// set, the certificate must carry SNI as a DNS name.
	SubjectAltNames []SubjectAltName `json:"subjectAltNames,omitempty"`
	// ClientCertificateSecret is a Secret of Kind TLSCertificate presented for mutual TLS.
	ClientCertificateSecret string `json:"clientCertificateSecret,omitempty"`
	// MinVersion and MaxVersion are "1.2" or "1.3"; empty is Envoy's default.
	MinVersion   string   `json:"minVersion,omitempty"`
	MaxVersion   string   `json:"maxVersion,omitempty"`
	CipherSuites []string `json:"cipherSuites,omitempty"`
	// ALPN protocols offered; empty follows the cluster protocol (h2 for HTTP2/GRPC).
	ALPN []string `json:"alpn,omitempty"`
}

// SubjectAltName is a name the server certificate must carry.
type SubjectAltName struct {
	// Type is "DNS" (a leading "*." matches one label) or "URI".
	Type  string `json:"type"`
	Value string `json:"value"`
}

// CircuitBreaker limits concurrent work towards a cluster; zero fields keep Envoy's defaults.
type CircuitBreaker struct {
	MaxConnections     uint32 `json:"maxConnections,omitempty"`
	MaxPendingRequests uint32 `json:"maxPendingRequests,omitempty"`
	MaxRequests        uint32 `json:"maxRequests,omitempty"`
}

// OutlierDetection ejects endpoints that keep failing.
type OutlierDetection struct {
	// Consecutive5xx responses (or connection failures) that eject an endpoint.
	Consecutive5xx     uint32        `json:"consecutive5xx"`
	Interval           time.Duration `json:"interval"`
	BaseEjectionTime   time.Duration `json:"baseEjectionTime"`
	MaxEjectionPercent uint32        `json:"maxEjectionPercent"`
}

// Credential is a header whose value comes from a secret (Kind Generic) by SDS.
type Credential struct {
	// Header is the request header to set (default Authorization).
	Header string `json:"header"`
	// Secret names the Generic secret holding the full header value (prefix included).
	Secret string `json:"secret"`
}

// SecretKind is what a Secret holds.
type SecretKind string

const (
	// SecretTLSCertificate is a certificate chain and private key.
	SecretTLSCertificate SecretKind = "TLSCertificate"
	// SecretCACertificate is a PEM CA bundle for verifying peers.
	SecretCACertificate SecretKind = "CACertificate"
	// SecretGeneric is an opaque value (an injected credential).
	SecretGeneric SecretKind = "Generic"
)

// Secret is material served to Envoy only by SDS. Its String method never prints data.
type Secret struct {
	// Name is "<kind>/<ns>/<object>/<key>..." and changes when the source object changes
	// identity, not when its content rotates (rotation re-pushes the same name).
	Name string     `json:"name"`
	Kind SecretKind `json:"kind"`
	// Certificate is the PEM chain (TLSCertificate) or CA bundle (CACertificate).
	Certificate []byte `json:"certificate,omitempty"`
	// PrivateKey is the PEM private key (TLSCertificate).
	PrivateKey []byte `json:"privateKey,omitempty"`
	// Value is the opaque value (Generic).
	Value []byte `json:"value,omitempty"`
}

// String names the secret without its data, so a secret printed by mistake leaks nothing.
func (s Secret) String() string { return string(s.Kind) + " " + s.Name }

// Equal tells whether s and o are the same secret with the same data: the builders
// would serve them alike, and a delta need not replace one by the other.
// TestEqualityCoversEveryField (envoyconfig) checks that it compares every field.
func (s *Secret) Equal(o *Secret) bool {
	return s.Name == o.Name && s.Kind == o.Kind && bytes.Equal(s.Certificate, o.Certificate) &&
		bytes.Equal(s.PrivateKey, o.PrivateKey) && bytes.Equal(s.Value, o.Value)
}

// HTTPRouteOf is the "namespace/name" of the HTTPRoute a route came from, read from its
// Name ("<ns>/<route>/rule/<i>/match/<j>"); any other name is returned as it is.
func HTTPRouteOf(routeName string) string {
	ns, rest, ok := strings.Cut(routeName, "/")
	if !ok {
		return routeName
	}
	name, _, _ := strings.Cut(rest, "/")
	return ns + "/" + name
}
