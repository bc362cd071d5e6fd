package v1alpha1

// Backend condition types.
const (
	// ConditionAccepted says whether the Backend's spec is valid and allowed.
	ConditionAccepted = "Accepted"
	// ConditionResolvedRefs says whether every referenced Secret, ConfigMap and Service exists and is usable.
	ConditionResolvedRefs = "ResolvedRefs"
	// ConditionAddressesResolved says whether the DNS guard vetted at least one address
	// (FQDN and ExternalName destinations only).
	ConditionAddressesResolved = "AddressesResolved"
	// ConditionProgrammed says whether Envoy accepted the configuration for this Backend.
	ConditionProgrammed = "Programmed"
)

// Reasons of the Accepted condition.
const (
	ReasonAccepted             = "Accepted"
	ReasonInvalid              = "Invalid"
	ReasonForbiddenDestination = "ForbiddenDestination"
	ReasonUnsupportedProtocol  = "UnsupportedProtocol"
	ReasonUnsupportedExtension = "UnsupportedExtension"
)

// Reasons of the ResolvedRefs condition.
const (
	ReasonResolvedRefs            = "ResolvedRefs"
	ReasonInvalidCertificateRef   = "InvalidCertificateRef"
	ReasonInvalidCACertificateRef = "InvalidCACertificateRef"
	ReasonServiceNotFound         = "ServiceNotFound"
)

// Reasons of the AddressesResolved condition.
const (
	ReasonResolved              = "Resolved"
	ReasonAllAddressesForbidden = "AllAddressesForbidden"
	ReasonNXDomain              = "NXDomain"
	ReasonResolutionFailed      = "ResolutionFailed"
	ReasonStale                 = "Stale"
)

// Reasons of the Programmed condition.
const (
	ReasonProgrammed    = "Programmed"
	ReasonNotReferenced = "NotReferenced"
	ReasonPending       = "Pending"
	ReasonRejected      = "Rejected"
	// ReasonInvalidPortRef: HTTPRoutes reference the Backend only through ports it does
	// not have (or cannot carry HTTP on), so nothing of it is programmed; the routes'
	// ResolvedRefs conditions name each such ref.
	ReasonInvalidPortRef = "InvalidPortRef"
)

// ReasonInvalidCredentialRef is the ResolvedRefs reason for a credential-injection
// extension whose Secret or key cannot be read.
const ReasonInvalidCredentialRef = "InvalidCredentialRef"

// ReasonPendingResolution is the AddressesResolved reason (status Unknown) before the DNS
// guard has answered for the name.
const ReasonPendingResolution = "Pending"
