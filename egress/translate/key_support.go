package translate

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"fmt"
)

// envoyKeySupport tells why Envoy (BoringSSL) would refuse a certificate's key, or "".
// Go parses RSA keys below 2048 bits and ECDSA keys on P-224, but Envoy refuses to load
// such a certificate, so the whole Gateway's configuration would be rejected; the
// translator refuses it first, as a condition on the one object that names it.
// Measured with Envoy 1.40: RSA 1024 and P-224 refused; RSA 2048-16384, P-256, P-384,
// P-521 and Ed25519 accepted.
func envoyKeySupport(pub any) string {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if bits := k.N.BitLen(); bits < 2048 {
			return fmt.Sprintf("the certificate has a %d-bit RSA key; Envoy needs at least 2048 bits", bits)
		}
	case *ecdsa.PublicKey:
		switch name := k.Curve.Params().Name; name {
		case "P-256", "P-384", "P-521":
		default:
			return fmt.Sprintf("the certificate has an ECDSA key on curve %s; Envoy supports P-256, P-384 and P-521", name)
		}
	}
	return ""
}
