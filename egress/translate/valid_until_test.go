package translate

import (
	"crypto/tls"
	"path/filepath"
	"testing"
	"time"
)

// TestValidUntilIsWhenACheckedCertificateChanges: a translation says until when its
// result holds for its inputs, the first time a certificate it checked against the
// clock expires or becomes valid, whether the Backend was translated or replayed from
// the memo; the manager reuses a translation only until then.
func TestValidUntilIsWhenACheckedCertificateChanges(t *testing.T) {
	leaf := clientLeaf(t).Leaf
	res, addrs := manyBackends(t, 3)
	tests := []struct {
		name string
		now  time.Time
		want time.Time
	}{
		{name: "a valid certificate: the moment after it expires", now: leaf.NotAfter.Add(-time.Hour), want: leaf.NotAfter.Add(time.Nanosecond)},
		{name: "a certificate not valid yet: when it becomes valid", now: leaf.NotBefore.Add(-time.Hour), want: leaf.NotBefore},
		{name: "an expired certificate: never (only a new Secret changes that)", now: leaf.NotAfter.Add(time.Hour)},
		{name: "no clock: never", now: time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Now: tt.now, Cache: NewCache()}
			for _, pass := range []string{"translated", "replayed from the memo"} {
				if got := Translate(res, addrs, opts).ValidUntil; !got.Equal(tt.want) {
					t.Errorf("%s: ValidUntil %v, want %v", pass, got, tt.want)
				}
			}
		})
	}
}

func clientLeaf(t *testing.T) *tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join("testdata", "certs", "client.crt"), filepath.Join("testdata", "certs", "client.key"))
	if err != nil {
		t.Fatal(err)
	}
	if pair.Leaf == nil {
		t.Fatal("the test client certificate has no leaf")
	}
	return &pair
}
