package xdscerts

import (
	"crypto/x509"
	"testing"
	"time"
)

// TestLeafRenewalTime: renewal comes 2/3 into a certificate's life counted from its
// issue, not from its backdated NotBefore, and a shorter configured lifetime brings it
// forward for certificates issued before the change.
func TestLeafRenewalTime(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cert := func(life time.Duration) *x509.Certificate {
		return &x509.Certificate{NotBefore: issued.Add(-backdate), NotAfter: issued.Add(life)}
	}
	tests := []struct {
		name     string
		life     time.Duration
		lifetime time.Duration
		want     time.Duration // after issue
	}{
		{name: "a 90-day certificate under the 90-day default", life: 90 * 24 * time.Hour, lifetime: 90 * 24 * time.Hour, want: 60 * 24 * time.Hour},
		{name: "a 45-second certificate is due after 30 s, not before it was made", life: 45 * time.Second, lifetime: 45 * time.Second, want: 30 * time.Second},
		{name: "a 90-day certificate after the lifetime was cut to 45 s", life: 90 * 24 * time.Hour, lifetime: 45 * time.Second, want: 30 * time.Second},
		{name: "a longer configured lifetime does not postpone an older certificate", life: time.Hour, lifetime: 90 * 24 * time.Hour, want: 40 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := leafRenewalTime(cert(tt.life), tt.lifetime).Sub(issued); got != tt.want {
				t.Fatalf("renewal %s after issue, want %s", got, tt.want)
			}
		})
	}
}

// TestPlanLeafWaitsOnlyForANewCA: a leaf due for renewal is reissued at once when the
// current CA signed it (every peer already trusts that CA), even if the CA is younger
// than the propagation time; under a CA that replaced its signer it waits.
func TestPlanLeafWaitsOnlyForANewCA(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	spec := leafSpec{commonName: "portcullis-envoy", usage: x509.ExtKeyUsageClientAuth}
	oldCA, err := newCA(start, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	newerCA, err := newCA(start.Add(time.Minute), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := issue(oldCA, spec, start, 2*time.Hour) // due early: the configured lifetime is 45 s
	if err != nil {
		t.Fatal(err)
	}
	key, err := keyPEM(leaf.key)
	if err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{CertKey: certPEM(leaf.cert), KeyKey: key}
	due := start.Add(31 * time.Second)
	tests := []struct {
		name string
		ca   caState
		want bool
	}{
		{name: "same signer: reissued at once", ca: caState{signer: oldCA, bundle: []*x509.Certificate{oldCA.cert}}, want: true},
		{name: "a new signer younger than the propagation: wait", ca: caState{signer: newerCA, bundle: []*x509.Certificate{newerCA.cert, oldCA.cert}}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planLeaf(data, spec, tt.ca, due, time.Hour, 45*time.Second); got.reissue != tt.want {
				t.Fatalf("reissue = %v (%s), want %v", got.reissue, got.reason, tt.want)
			}
		})
	}
}
