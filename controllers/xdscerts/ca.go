package xdscerts

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"time"
)

// caState is the CA that signs new certificates and the bundle every party trusts.
type caState struct {
	signer keyPair
	// bundle starts with the signer; older CAs follow while they are still valid, so
	// certificates they issued keep working during a CA rotation.
	bundle []*x509.Certificate
}

// caDecision is what the CA Secret must become.
type caDecision struct {
	state caState
	// reason says why the Secret changes; empty when it stays as it is.
	reason string
	// newCA is set when a new CA was made (first start, rotation, or repair).
	newCA bool
}

// planCA decides the CA from the CA Secret's data: keep it, rotate it once 2/3 of its
// life is over (trusting the old one alongside the new one until it expires), or replace
// it when it cannot be read.
func planCA(data map[string][]byte, now time.Time, lifetime time.Duration) (caDecision, error) {
	current, err := parseKeyPair(data[CertKey], data[KeyKey])
	if err == nil && !current.cert.IsCA {
		err = fmt.Errorf("certificate is not a CA")
	}
	oldBundle, _ := parseCerts(data[BundleKey]) // an unreadable bundle is rebuilt
	switch {
	case err != nil && len(data) == 0:
		return rotateCA(nil, now, lifetime, "created")
	case err != nil:
		return rotateCA(oldBundle, now, lifetime, "the stored CA is unreadable ("+err.Error()+")")
	case !now.Before(renewalTime(current.cert)):
		return rotateCA(append([]*x509.Certificate{current.cert}, oldBundle...), now, lifetime,
			"2/3 of the CA's life is over (renewal due "+renewalTime(current.cert).UTC().Format(time.RFC3339)+")")
	}
	bundle := []*x509.Certificate{current.cert}
	for _, c := range oldBundle {
		if !c.Equal(current.cert) {
			bundle = append(bundle, c)
		}
	}
	d := caDecision{state: caState{signer: current, bundle: bundle}}
	if !bytes.Equal(bundlePEM(bundle), data[BundleKey]) {
		d.reason = "the trust bundle lacks the signing CA"
	}
	return d, nil
}

// rotateCA makes a new CA and a bundle of it and the previous CAs still valid now.
func rotateCA(previous []*x509.Certificate, now time.Time, lifetime time.Duration, reason string) (caDecision, error) {
	ca, err := newCA(now, lifetime)
	if err != nil {
		return caDecision{}, err
	}
	bundle := []*x509.Certificate{ca.cert}
	for _, c := range previous {
		if c.IsCA && now.Before(c.NotAfter) && !containsCert(bundle, c) {
			bundle = append(bundle, c)
		}
	}
	return caDecision{state: caState{signer: ca, bundle: bundle}, reason: reason, newCA: true}, nil
}

func containsCert(certs []*x509.Certificate, c *x509.Certificate) bool {
	for _, have := range certs {
		if have.Equal(c) {
			return true
		}
	}
	return false
}

// caData is the CA Secret's content for s.
func caData(s caState) (map[string][]byte, error) {
	key, err := keyPEM(s.signer.key)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		CertKey:   certPEM(s.signer.cert),
		KeyKey:    key,
		BundleKey: bundlePEM(s.bundle),
	}, nil
}
