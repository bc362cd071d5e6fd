package translate

import (
	"slices"
	"strings"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// checkCipherSuites refuses cipher suites outside SupportedCipherSuites. The CRD's enum
// refuses them at kubectl apply; this check covers Backends stored before the enum
// existed and inputs that never met the API server (portcullis translate). Envoy would
// otherwise reject the Gateway's whole configuration, or accept a weak suite or a rule
// word such as ALL.
func checkCipherSuites(suites []string) *refError {
	for i, s := range suites {
		if !slices.Contains(egressv1alpha1.SupportedCipherSuites, s) {
			return newRefError(egressv1alpha1.ReasonInvalid, "tls.cipherSuites[%d]: %q is not a supported TLS 1.2 cipher suite; use one of %s",
				i, s, strings.Join(egressv1alpha1.SupportedCipherSuites, ", "))
		}
	}
	return nil
}
