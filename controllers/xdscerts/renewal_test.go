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
