package xdscerts

import (
	"crypto/x509"
	"slices"
	"testing"
	"time"
)

// TestCARotation walks a CA through its life with short lifetimes (CA 300 h, leaves
// 90 h, propagation 20 h). Each step sets the clock, runs Ensure and checks who signed
// the leaves and which CAs the bundle trusts.
func TestCARotation(t *testing.T) {
	ns := newNamespace(t)
	clock := newClock()
	start := clock.Now()
	opts := testOptions(ns, clock)
	opts.CALifetime, opts.LeafLifetime, opts.Propagation = 300*time.Hour, 90*time.Hour, 20*time.Hour
	m := newManager(t, opts)

	// cas names the CAs in order of creation: "CA1", "CA2", ...
	var cas []*x509.Certificate
	name := func(c *x509.Certificate) string {
		for i, ca := range cas {
			if ca.Equal(c) {
				return "CA" + string(rune('1'+i))
			}
		}
		return "unknown CA " + c.SerialNumber.Text(16)
	}
	issuer := func(leaf *x509.Certificate) string {
		for _, ca := range cas {
			if leaf.CheckSignatureFrom(ca) == nil {
				return name(ca)
			}
		}
		return "unknown"
	}

	steps := []struct {
		name       string
		at         time.Duration
		wantSigner string
		wantBundle []string
		wantIssuer string // of both leaves
		wantLeaves bool   // whether the leaves were reissued at this step
	}{
		{"first start: one CA signs both leaves", 0, "CA1", []string{"CA1"}, "CA1", true},
		{"expired leaves are reissued at once", 150 * time.Hour, "CA1", []string{"CA1"}, "CA1", true},
		{"past 2/3 of its life the CA is replaced and the old one stays trusted; leaves not yet due stay", 201 * time.Hour, "CA2", []string{"CA2", "CA1"}, "CA1", false},
		{"leaves due while the new CA is younger than the propagation time wait", 211 * time.Hour, "CA2", []string{"CA2", "CA1"}, "CA1", false},
		{"once the new CA is trusted long enough the due leaves are reissued by it", 222 * time.Hour, "CA2", []string{"CA2", "CA1"}, "CA2", true},
		{"the next rotation drops the expired first CA", 402 * time.Hour, "CA3", []string{"CA3", "CA2"}, "CA3", true},
	}
	var lastServer *x509.Certificate
	for _, step := range steps {
		clock.Set(start.Add(step.at))
		ensure(t, m)
		caSecret := getSecret(t, ns, CASecretName)
		signer := storedCert(t, caSecret, CertKey)
		if !slices.ContainsFunc(cas, signer.Equal) {
			cas = append(cas, signer)
		}
		var bundle []string
		for _, c := range storedCerts(t, caSecret, BundleKey) {
			bundle = append(bundle, name(c))
		}
		server := storedCert(t, getSecret(t, ns, ServerSecretName), CertKey)
		client := storedCert(t, getSecret(t, ns, ClientSecretName), CertKey)
		reissued := lastServer == nil || !server.Equal(lastServer)
		lastServer = server

		t.Run(step.name, func(t *testing.T) {
			if got := name(signer); got != step.wantSigner {
				t.Errorf("signing CA = %s, want %s", got, step.wantSigner)
			}
			if !slices.Equal(bundle, step.wantBundle) {
				t.Errorf("bundle = %v, want %v", bundle, step.wantBundle)
			}
			if got := issuer(server); got != step.wantIssuer {
				t.Errorf("server certificate issued by %s, want %s", got, step.wantIssuer)
			}
			if got := issuer(client); got != step.wantIssuer {
				t.Errorf("client certificate issued by %s, want %s", got, step.wantIssuer)
			}
			if reissued != step.wantLeaves {
				t.Errorf("leaves reissued = %v, want %v", reissued, step.wantLeaves)
			}
			for _, n := range []string{ServerSecretName, ClientSecretName} {
				if got := getSecret(t, ns, n).Data[BundleKey]; string(got) != string(caSecret.Data[BundleKey]) {
					t.Errorf("%s ca.crt is not the CA's bundle", n)
				}
			}
			if server.NotAfter.After(signer.NotAfter) && issuer(server) == name(signer) {
				t.Errorf("the server certificate outlives its CA")
			}
		})
	}
}
