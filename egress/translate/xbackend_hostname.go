package translate

import (
	"fmt"
	"net/netip"
	"strings"

	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// The XBackend CRD refuses only hostnames ending in .cluster.local, where the Backend
// CRD refuses much more at `kubectl apply` (api/v1alpha1, destination_types.go). The
// translator applies the Backend's rules to an XBackend's hostname itself, since no API
// server did: an IP literal in any spelling, a wildcard, and the reserved or
// cluster-internal suffixes (the Gateway API says a cluster's own names must be
// refused). The DNS guard refuses, in addition, its --cluster-domain and
// --deny-name-suffix names when it resolves.

// reservedSuffixes are the suffixes the Backend CRD refuses in spec.destination.fqdn.hostname.
var reservedSuffixes = []string{"cluster.local", "home.arpa", "in-addr.arpa", "ip6.arpa", "localdomain", "localhost", "internal", "local", "svc"}

const hostnameField = "spec.externalHostname.hostname"

// checkExternalHostname refuses what the Backend CRD would refuse as an FQDN hostname.
func checkExternalHostname(h string) *refError {
	switch {
	case h == "":
		return newRefError(egressv1alpha1.ReasonInvalid, "%s is empty", hostnameField)
	case strings.Contains(h, "*"):
		return newRefError(egressv1alpha1.ReasonInvalid, "%s %q must not contain a wildcard: declare each outside name as its own XBackend", hostnameField, h)
	case ipLiteral(h):
		return newRefError(egressv1alpha1.ReasonForbiddenDestination, "%s %q is an IP address literal: an XBackend names a host, and a Portcullis Backend of type IP sends to an address", hostnameField, h)
	}
	if s := reservedSuffix(h); s != "" {
		return newRefError(egressv1alpha1.ReasonForbiddenDestination, "%s %s is under the reserved or cluster-internal suffix .%s: an XBackend names an outside destination (send to an in-cluster Service with a Service backendRef)", hostnameField, h, s)
	}
	if msg := dnsNameProblem(h, 2); msg != "" {
		return newRefError(egressv1alpha1.ReasonInvalid, "%s %q %s", hostnameField, h, msg)
	}
	return nil
}

// checkServerName refuses an SNI (spec.tls.validation.hostname) that is no DNS name.
func checkServerName(h string) *refError {
	const sniField = "spec.tls.validation.hostname"
	if ipLiteral(h) {
		return newRefError(egressv1alpha1.ReasonInvalid, "%s %q is an IP address literal; TLS sends a server name (SNI), never an address", sniField, h)
	}
	if msg := dnsNameProblem(h, 1); msg != "" {
		return newRefError(egressv1alpha1.ReasonInvalid, "%s %q %s", sniField, h, msg)
	}
	return nil
}

// ipLiteral reports whether h is an IP address in any spelling a resolver library would
// accept: IPv6, and every inet_aton form, whose last label is decimal, octal or hex
// (127.1, 2130706433, 0x7f000001). Like the Backend CRD, a name whose last label is all
// digits or 0x-hex is refused.
func ipLiteral(h string) bool {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil || strings.Contains(h, ":") {
		return true
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	if strings.HasPrefix(last, "0x") {
		return strings.Trim(last[2:], "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

func reservedSuffix(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	for _, s := range reservedSuffixes {
		if h == s || strings.HasSuffix(h, "."+s) {
			return s
		}
	}
	return ""
}

// dnsNameProblem says why h is not a lowercase RFC 1123 name of at least minLabels
// labels, or "".
func dnsNameProblem(h string, minLabels int) string {
	if len(h) > 253 {
		return "is longer than 253 characters"
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if msg := labelProblem(l); msg != "" {
			return "is not a lowercase RFC 1123 DNS name: " + msg
		}
	}
	if len(labels) < minLabels {
		return "is a single label: write the fully qualified name, such as api.example.com"
	}
	return ""
}

func labelProblem(l string) string {
	switch {
	case l == "":
		return "empty label (no trailing dot, no two dots in a row)"
	case len(l) > 63:
		return fmt.Sprintf("label %.20q... is longer than 63 characters", l)
	case l[0] == '-' || l[len(l)-1] == '-':
		return fmt.Sprintf("label %q starts or ends with '-'", l)
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return fmt.Sprintf("character %q in label %q (allowed: a-z, 0-9, '-')", c, l)
		}
	}
	return ""
}

// XBackendHostname returns the name the DNS guard must resolve for an XBackend: its
// hostname when that passes the rules above (a refused one is never resolved).
func XBackendHostname(x *gwapixv1alpha1.XBackend) (string, bool) {
	h, e := xbackendHostname(&x.Spec)
	return h, e == nil
}
