package translate

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-io/portcullis/egress"
)

// compareWithCold translates with the shared cache and with a cold one (on a deep copy
// of the input) and fails unless the two results are identical Go values.
func compareWithCold(t *testing.T, step string, cache *Cache, res *egress.Resources, addrs egress.Addresses, opts Options) Result {
	t.Helper()
	opts.Cache = cache
	got := Translate(res, addrs, opts)
	opts.Cache = NewCache()
	want := Translate(res.DeepCopy(), addrs, opts)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: the translation with a warm cache differs from a cold one:\n%s\nwant:\n%s", step, renderResult(t, got), renderResult(t, want))
	}
	return got
}

// TestCachedTranslationEqualsColdOnGoldenInputs translates every golden input, twice
// over, with one Cache: inputs reuse the same object names with other content.
func TestCachedTranslationEqualsColdOnGoldenInputs(t *testing.T) {
	cache := NewCache()
	for pass := range 2 {
		for _, in := range goldenInputs(t) {
			res, addrs, opts := loadGoldenInput(t, in)
			compareWithCold(t, filepath.Base(in)+" pass "+string(rune('1'+pass)), cache, res, addrs, opts)
		}
	}
}

// TestCachedTranslationFollowsEveryInput changes, one step after the other, everything
// an FQDN Backend's translation reads, and compares with a cold translation each time.
func TestCachedTranslationFollowsEveryInput(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-private-ca-sans-mtls.in.yaml"))
	client := findSecret(t, res, "client")
	goodKey := client.Data[corev1.TLSPrivateKeyKey]
	otherCA, err := os.ReadFile(filepath.Join("testdata", "certs", "gateway.crt"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		edit func()
		// usable is whether the Backend's translation is expected to succeed.
		usable bool
	}{
		{"unchanged", func() {}, true},
		{"unchanged again", func() {}, true},
		{"the DNS guard vets another address", func() {
			addrs["api.example.com"] = egress.Resolution{State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr("203.0.113.99")}}}
		}, true},
		{"the server name changes", func() { s := "gw2.partner.example"; res.Backends[0].Spec.Destination.FQDN.TLS.ServerName = &s }, true},
		{"only the generation changes", func() { res.Backends[0].Generation++ }, true},
		{"the CA ConfigMap holds another CA", func() { res.ConfigMaps[0].Data["ca.crt"] = string(otherCA) }, true},
		{"the client key is replaced by garbage", func() { client.Data[corev1.TLSPrivateKeyKey] = []byte("garbage") }, false},
		{"the client key is restored", func() { client.Data[corev1.TLSPrivateKeyKey] = goodKey }, true},
		{"the clock passes the certificate's expiry", func() { opts.Now = time.Date(2127, 1, 1, 0, 0, 0, 0, time.UTC) }, false},
		{"the clock is before the certificate's start", func() { opts.Now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }, false},
		{"the clock is back", func() { opts.Now = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) }, true},
		{"the client Secret becomes Opaque", func() { client.Type = corev1.SecretTypeOpaque }, false},
		{"the client Secret is kubernetes.io/tls again", func() { client.Type = corev1.SecretTypeTLS }, true},
		{"the CA Secret loses its key", func() { delete(findSecret(t, res, "partner-ca-next").Data, "bundle.pem") }, false},
		{"the CA Secret gets it back", func() { findSecret(t, res, "partner-ca-next").Data["bundle.pem"] = otherCA }, true},
		{"the DNS guard forgets the name", func() { delete(addrs, "api.example.com") }, true},
	}
	cache := NewCache()
	for _, step := range steps {
		step.edit()
		got := compareWithCold(t, step.name, cache, res, addrs, opts)
		if usable := len(got.Gateways) == 1 && len(got.Gateways[0].Clusters) == 1; usable != step.usable {
			t.Fatalf("%s: the Backend is usable: %v, want %v", step.name, usable, step.usable)
		}
	}
}

// TestCachedTranslationFollowsTheAddressPolicy flips the policy IP destinations are
// vetted against.
func TestCachedTranslationFollowsTheAddressPolicy(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-ip-destinations.in.yaml"))
	denyDocs := prefixPolicy{netip.MustParsePrefix("203.0.113.0/24")}
	cache := NewCache()
	for _, policy := range []egress.AddressPolicy{opts.AddressPolicy, nil, denyDocs, opts.AddressPolicy, prefixPolicy{}} {
		opts.AddressPolicy = policy
		compareWithCold(t, "policy", cache, res, addrs, opts)
	}
}

// TestCachedTranslationReusesBackends proves the memo is used: the second and third
// translations of the same input share the Backend's cluster settings, which the first
// (that recorded them) did not hand out.
func TestCachedTranslationReusesBackends(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-private-ca-sans-mtls.in.yaml"))
	opts.Cache = NewCache()
	var tls [3]any
	for i := range tls {
		r := Translate(res, addrs, opts)
		tls[i] = r.Gateways[0].Clusters[0].TLS
	}
	if tls[1] != tls[2] {
		t.Error("the second and third translations built the Backend afresh")
	}
	if tls[0] == tls[1] {
		t.Error("the first translation handed out the memo's private copy")
	}
}

// TestCacheForgetsWhatIsNoLongerUsed translates a cluster, then an empty one twice: the
// Backend and certificate entries are dropped.
func TestCacheForgetsWhatIsNoLongerUsed(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-private-ca-sans-mtls.in.yaml"))
	opts.Cache = NewCache()
	Translate(res, addrs, opts)
	if len(opts.Cache.backends) == 0 || len(opts.Cache.pairs) == 0 || len(opts.Cache.bundles) == 0 {
		t.Fatalf("nothing was cached: %d Backends, %d key pairs, %d bundles", len(opts.Cache.backends), len(opts.Cache.pairs), len(opts.Cache.bundles))
	}
	for range 2 {
		Translate(&egress.Resources{}, nil, opts)
	}
	if n := len(opts.Cache.backends) + len(opts.Cache.pairs) + len(opts.Cache.bundles); n != 0 {
		t.Errorf("%d entries are still cached after two translations that used none", n)
	}
}

func findSecret(t *testing.T, res *egress.Resources, name string) *corev1.Secret {
	t.Helper()
	for i := range res.Secrets {
		if res.Secrets[i].Name == name {
			return &res.Secrets[i]
		}
	}
	t.Fatalf("no Secret %s", name)
	return nil
}
