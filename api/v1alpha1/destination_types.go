package v1alpha1

// DestinationType names which member of a BackendDestination is set.
// +kubebuilder:validation:Enum=FQDN;IP;Service
type DestinationType string

const (
	// DestinationTypeFQDN sends to an outside DNS name, resolved and vetted by the DNS guard.
	DestinationTypeFQDN DestinationType = "FQDN"
	// DestinationTypeIP sends to a literal IP address, vetted by the DNS guard's address policy.
	DestinationTypeIP DestinationType = "IP"
	// DestinationTypeService sends to a Service in the Backend's namespace.
	DestinationTypeService DestinationType = "Service"
)

// BackendDestination says where a Backend's traffic goes. Exactly one of fqdn, ip and
// kubernetesService is set, and it is the one that type names.
//
// +kubebuilder:validation:XValidation:rule="[has(self.fqdn), has(self.ip), has(self.kubernetesService)].filter(x, x).size() == 1",message="spec.destination must set exactly one of fqdn, ip or kubernetesService (the one that type names)"
// +kubebuilder:validation:XValidation:rule="self.type != 'FQDN' || has(self.fqdn)",message="spec.destination.type is FQDN, so spec.destination.fqdn must be set"
// +kubebuilder:validation:XValidation:rule="self.type != 'IP' || has(self.ip)",message="spec.destination.type is IP, so spec.destination.ip must be set"
// +kubebuilder:validation:XValidation:rule="self.type != 'Service' || has(self.kubernetesService)",message="spec.destination.type is Service, so spec.destination.kubernetesService must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.fqdn) || self.type == 'FQDN'",messageExpression="'spec.destination.fqdn is set but type is ' + self.type + '; set type: FQDN or remove fqdn'"
// +kubebuilder:validation:XValidation:rule="!has(self.ip) || self.type == 'IP'",messageExpression="'spec.destination.ip is set but type is ' + self.type + '; set type: IP or remove ip'"
// +kubebuilder:validation:XValidation:rule="!has(self.kubernetesService) || self.type == 'Service'",messageExpression="'spec.destination.kubernetesService is set but type is ' + self.type + '; set type: Service or remove kubernetesService'"
type BackendDestination struct {
	// type is the kind of destination: FQDN (an outside DNS name), IP (a literal address)
	// or Service (a Service in this namespace).
	// +required
	Type DestinationType `json:"type"`

	// fqdn is an outside DNS name. The gateway resolves it itself, through the DNS guard,
	// and connects only to the addresses the guard vetted. Set when type is FQDN.
	// +optional
	FQDN *FQDNDestination `json:"fqdn,omitempty"`

	// ip is a literal IPv4 or IPv6 address. It must pass the DNS guard's address policy.
	// Set when type is IP.
	// +optional
	IP *IPDestination `json:"ip,omitempty"`

	// kubernetesService is a Service in the Backend's namespace. An ExternalName Service
	// is resolved through the DNS guard like an FQDN. Set when type is Service.
	// +optional
	KubernetesService *ServiceDestination `json:"kubernetesService,omitempty"`

	// ports are the destination's ports (1 to 16, unique names and numbers). An HTTPRoute
	// backendRef picks one with its port; it may leave port out when there is only one.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(p, self.exists_one(q, q.name == p.name))",message="spec.destination.ports: port names must be unique"
	// +kubebuilder:validation:XValidation:rule="self.all(p, self.exists_one(q, q.port == p.port))",message="spec.destination.ports: port numbers must be unique"
	Ports []BackendPort `json:"ports"`
}

// FQDNDestination is an outside DNS name.
type FQDNDestination struct {
	// hostname is the outside DNS name to connect to: a lowercase RFC 1123 name with at
	// least two labels, at most 253 characters, with no wildcard and no trailing dot. IP
	// literals (use type IP), localhost and cluster-internal or reserved suffixes (local,
	// internal, localdomain, home.arpa, cluster.local, svc, in-addr.arpa, ip6.arpa) are
	// refused. It is also the default TLS server name (SNI) and the name the server's
	// certificate is verified against.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.contains('*')",message="spec.destination.fqdn.hostname must not contain a wildcard: declare each outside name as its own Backend"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(.*[.])?(0[xX][0-9a-fA-F]*|[0-9]+)[.]?$')",message="spec.destination.fqdn.hostname is an IP address literal (dotted, decimal, hex or octal spelling): use type IP with spec.destination.ip.address instead"
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?([.][a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)+$')",message="spec.destination.fqdn.hostname must be a lowercase RFC 1123 DNS name with at least two labels such as api.example.com: labels of a-z, 0-9 and '-', at most 63 characters each, no underscore, no uppercase, no trailing dot"
	// +kubebuilder:validation:XValidation:rule="!['cluster.local', 'home.arpa', 'in-addr.arpa', 'ip6.arpa', 'localdomain', 'localhost', 'internal', 'local', 'svc'].exists(s, self == s || self.endsWith('.' + s))",messageExpression="'spec.destination.fqdn.hostname ' + self + ' is under the reserved or cluster-internal suffix .' + ['cluster.local', 'home.arpa', 'in-addr.arpa', 'ip6.arpa', 'localdomain', 'localhost', 'internal', 'local', 'svc'].filter(s, self == s || self.endsWith('.' + s))[0] + ': a Backend names an outside destination (use type Service for in-cluster Services)'"
	Hostname string `json:"hostname"`

	// tls originates TLS to the destination. It applies to ports of protocol HTTPS and TLS.
	// +optional
	TLS *BackendTLS `json:"tls,omitempty"`

	// protocol is the application protocol spoken to the destination (default HTTP1).
	// +optional
	Protocol *BackendProtocol `json:"protocol,omitempty"`
}

// IPDestination is a literal IP address.
type IPDestination struct {
	// address is an IPv4 or IPv6 address, with no port, prefix length or zone.
	// +required
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="spec.destination.ip.address must be an IPv4 or IPv6 address such as 203.0.113.7 or 2001:db8::7 (no port, prefix length, zone or leading zeros)"
	Address string `json:"address"`

	// tls originates TLS to the destination. It applies to ports of protocol HTTPS and TLS.
	// With no serverName, no SNI is sent and the certificate is verified against
	// subjectAltNames.
	// +optional
	TLS *BackendTLS `json:"tls,omitempty"`

	// protocol is the application protocol spoken to the destination (default HTTP1).
	// +optional
	Protocol *BackendProtocol `json:"protocol,omitempty"`
}

// ServiceDestination is a Service in the Backend's namespace.
type ServiceDestination struct {
	// name is the Service's name, in the Backend's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// tls originates TLS to the Service. A BackendTLSPolicy that targets the Service takes
	// precedence for server verification; the client certificate, cipher suites, ALPN and
	// TLS versions still come from here (see the README's "How TLS is merged").
	// +optional
	TLS *BackendTLS `json:"tls,omitempty"`

	// protocol is the application protocol spoken to the Service (default HTTP1).
	// +optional
	Protocol *BackendProtocol `json:"protocol,omitempty"`
}

// PortProtocol is the transport a destination port speaks.
// +kubebuilder:validation:Enum=HTTP;HTTPS;TLS;TCP
type PortProtocol string

const (
	// PortProtocolHTTP is plaintext HTTP.
	PortProtocolHTTP PortProtocol = "HTTP"
	// PortProtocolHTTPS is HTTP over TLS that the gateway originates.
	PortProtocolHTTPS PortProtocol = "HTTPS"
	// PortProtocolTLS is TLS that the gateway originates, carrying the route's protocol.
	PortProtocolTLS PortProtocol = "TLS"
	// PortProtocolTCP is plaintext TCP.
	PortProtocolTCP PortProtocol = "TCP"
)

// BackendPort is one port of the destination.
type BackendPort struct {
	// name identifies the port; an HTTPRoute backendRef and a BackendTLSPolicy
	// sectionName refer to it. A lowercase RFC 1123 label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// port is the destination's port number, 1 to 65535.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// protocol is HTTP, HTTPS, TLS or TCP. HTTPS and TLS originate TLS; HTTP and TCP do not,
	// unless a BackendTLSPolicy applies to a Service destination.
	// +required
	Protocol PortProtocol `json:"protocol"`
}
