package xdscerts

import (
	"bytes"
	"crypto/x509"
	"time"
)

// leafDecision is what a leaf Secret must become.
type leafDecision struct {
	pair keyPair
	// reissue is set when a new certificate and key replace the stored ones, with the
	// reason; refreshBundle when only ca.crt changes.
	reissue       bool
	reason        string
	refreshBundle bool
}

// planLeaf decides whether the leaf stored in data can stay. A leaf is reissued when it
// is missing or unreadable, names the wrong identity, is not valid now under the trust
// bundle, or 2/3 of its life is over. In the last case, when the signing CA is a new
// one, the new leaf waits until that CA has been trusted for propagation (so that every
// peer trusts its issuer first), unless the old leaf would expire meanwhile.
func planLeaf(data map[string][]byte, spec leafSpec, ca caState, now time.Time, propagation, lifetime time.Duration) leafDecision {
	pair, err := parseKeyPair(data[CertKey], data[KeyKey])
	switch {
	case err != nil && len(data[CertKey]) == 0:
		return leafDecision{reissue: true, reason: "created"}
	case err != nil:
		return leafDecision{reissue: true, reason: "the stored certificate is unreadable (" + err.Error() + ")"}
	case !spec.matches(pair.cert):
		return leafDecision{reissue: true, reason: "the certificate names another identity"}
	}
	if _, err := pair.cert.Verify(x509.VerifyOptions{
		Roots:       pool(ca.bundle),
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{spec.usage},
	}); err != nil {
		return leafDecision{reissue: true, reason: "the certificate is not valid now (" + err.Error() + ")"}
	}
	if due := leafRenewalTime(pair.cert, lifetime); !now.Before(due) {
		// The wait is for a new CA only: a leaf the current signer already signed
		// proves every peer of it trusts that CA.
		sameSigner := pair.cert.CheckSignatureFrom(ca.signer.cert) == nil
		signerAge := now.Sub(issuedAt(ca.signer.cert))
		if sameSigner || signerAge >= propagation || pair.cert.NotAfter.Sub(now) <= propagation {
			return leafDecision{reissue: true, reason: "2/3 of the certificate's life is over (renewal due " +
				due.UTC().Format(time.RFC3339) + ")"}
		}
	}
	return leafDecision{pair: pair, refreshBundle: !bytes.Equal(data[BundleKey], bundlePEM(ca.bundle))}
}

// leafData is a leaf Secret's content.
func leafData(pair keyPair, ca caState) (map[string][]byte, error) {
	key, err := keyPEM(pair.key)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		CertKey:   certPEM(pair.cert),
		KeyKey:    key,
		BundleKey: bundlePEM(ca.bundle),
	}, nil
}
