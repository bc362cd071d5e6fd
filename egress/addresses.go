package egress

import (
	"net/netip"
	"slices"
	"time"
)

// ResolutionState is what the DNS guard knows of a name.
type ResolutionState string

const (
	// ResolutionPending means the name has not been resolved yet.
	ResolutionPending ResolutionState = "Pending"
	// ResolutionResolved means at least one answer passed the guard.
	ResolutionResolved ResolutionState = "Resolved"
	// ResolutionAllForbidden means answers came back and the guard refused every one.
	ResolutionAllForbidden ResolutionState = "AllAddressesForbidden"
	// ResolutionNXDomain means the name does not exist.
	ResolutionNXDomain ResolutionState = "NXDomain"
	// ResolutionFailed means the name could not be resolved (timeout, SERVFAIL, a refused
	// CNAME target); no vetted set is held.
	ResolutionFailed ResolutionState = "ResolutionFailed"
	// ResolutionStale means resolution fails but the last vetted set is still inside its
	// grace period and is still used.
	ResolutionStale ResolutionState = "Stale"
	// ResolutionForbiddenName means the name itself (or a CNAME target) is refused by
	// the name policy.
	ResolutionForbiddenName ResolutionState = "ForbiddenName"
)

// Resolution is the DNS guard's answer for one name: the translator's only source of
// addresses for FQDN destinations.
type Resolution struct {
	State ResolutionState `json:"state"`
	// Message explains a state other than Resolved, for status.
	Message string `json:"message,omitempty"`
	// Vetted are the addresses Envoy may connect to.
	Vetted []VettedAddress `json:"vetted,omitempty"`
	// Blocked are answers the guard refused.
	Blocked []BlockedAddress `json:"blocked,omitempty"`
}

// VettedAddress is an address that passed the guard, valid until Expires (the guard's
// own schedule: a refresh moves it without telling anyone). Since is when the guard first
// vetted it in the unbroken run of answers that still holds it: a refresh that returns
// the same address keeps it, so status can show it without being rewritten per TTL.
type VettedAddress struct {
	IP      netip.Addr `json:"ip"`
	Expires time.Time  `json:"expires,omitzero"`
	Since   time.Time  `json:"since,omitzero"`
}

// BlockedAddress is an answer the guard refused and why.
type BlockedAddress struct {
	IP     netip.Addr `json:"ip"`
	Reason string     `json:"reason"`
}

// Addresses maps a lowercase hostname (no trailing dot) to its Resolution.
type Addresses map[string]Resolution

// SameForTranslation tells whether two resolutions say the same to translation: the
// state, the message, the vetted addresses with since when, and the blocked ones.
// Expires moves with every refresh and translation never reads it.
func SameForTranslation(a, b Resolution) bool {
	return a.State == b.State && a.Message == b.Message && slices.Equal(a.Blocked, b.Blocked) &&
		slices.EqualFunc(a.Vetted, b.Vetted, func(v, w VettedAddress) bool { return v.IP == w.IP && v.Since.Equal(w.Since) })
}

// AddressPolicy decides whether an address may be connected to; the DNS guard's
// address policy implements it. A refused address comes with a reason for status.
type AddressPolicy interface {
	CheckAddr(netip.Addr) (ok bool, reason string)
}
