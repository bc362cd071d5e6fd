package xdscerts

import (
	"github.com/portcullis-io/portcullis/internal/testenv"

	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestEnsureCreatesTheSecretsOnce(t *testing.T) {
	ns := newNamespace(t)
	clock := newClock()
	opts := testOptions(ns, clock)
	ensure(t, newManager(t, opts))

	ca := storedCert(t, getSecret(t, ns, CASecretName), CertKey)
	checks := []struct {
		name   string
		secret string
		check  func(t *testing.T, s *corev1.Secret, leaf *x509.Certificate)
	}{
		{"the CA is a self-signed P-256 CA valid for a year and the only trusted CA", CASecretName, func(t *testing.T, s *corev1.Secret, c *x509.Certificate) {
			if !c.IsCA || c.CheckSignatureFrom(c) != nil {
				t.Errorf("CA certificate: IsCA=%v, self-signed=%v", c.IsCA, c.CheckSignatureFrom(c) == nil)
			}
			if key, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || key.Curve != elliptic.P256() {
				t.Errorf("CA key is %T, want ECDSA P-256", c.PublicKey)
			}
			if got := c.NotAfter.Sub(clock.Now()); got != DefaultCALifetime {
				t.Errorf("CA valid for %s from now, want %s", got, DefaultCALifetime)
			}
			if got := serials(storedCerts(t, s, BundleKey)); !slices.Equal(got, serials([]*x509.Certificate{c})) {
				t.Errorf("bundle = %v, want only the CA", got)
			}
		}},
		{"the server certificate names the xDS Service and serves under the CA", ServerSecretName, func(t *testing.T, s *corev1.Secret, c *x509.Certificate) {
			if !slices.Equal(c.DNSNames, opts.ServiceNames) {
				t.Errorf("DNS names = %v, want %v", c.DNSNames, opts.ServiceNames)
			}
			verify(t, c, ca, clock.Now(), x509.ExtKeyUsageServerAuth)
			if got := c.NotAfter.Sub(clock.Now()); got != DefaultLeafLifetime {
				t.Errorf("server certificate valid for %s from now, want %s", got, DefaultLeafLifetime)
			}
		}},
		{"the client certificate names the manager's namespace and authenticates clients under the CA", ClientSecretName, func(t *testing.T, s *corev1.Secret, c *x509.Certificate) {
			if got, ok := NamespaceOf(c); !ok || got != ns {
				t.Errorf("NamespaceOf = %q, %v; want %q", got, ok, ns)
			}
			verify(t, c, ca, clock.Now(), x509.ExtKeyUsageClientAuth)
		}},
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			s := getSecret(t, ns, tc.secret)
			if s.Type != corev1.SecretTypeTLS {
				t.Errorf("type = %s, want %s", s.Type, corev1.SecretTypeTLS)
			}
			if got := slices.Sorted(maps.Keys(s.Data)); !slices.Equal(got, []string{BundleKey, CertKey, KeyKey}) {
				t.Errorf("keys = %v", got)
			}
			if s.Labels[managedByLabel] != managedByValue {
				t.Errorf("labels = %v", s.Labels)
			}
			if _, err := parseKeyPair(s.Data[CertKey], s.Data[KeyKey]); err != nil {
				t.Errorf("key pair: %v", err)
			}
			tc.check(t, s, storedCert(t, s, CertKey))
		})
	}

	t.Run("Ensure again, by this manager or a new one, writes nothing", func(t *testing.T) {
		before := resourceVersions(t, ns, ownSecrets...)
		clock.Set(clock.Now().Add(24 * time.Hour))
		ensure(t, newManager(t, opts))
		if after := resourceVersions(t, ns, ownSecrets...); !maps.Equal(before, after) {
			t.Fatalf("resourceVersions changed: %v -> %v", before, after)
		}
	})
}

func verify(t *testing.T, leaf, ca *x509.Certificate, at time.Time, usage x509.ExtKeyUsage) {
	t.Helper()
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots: pool([]*x509.Certificate{ca}), CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage},
	}); err != nil {
		t.Errorf("certificate %s does not verify under CA %s: %v", leaf.SerialNumber.Text(16), ca.SerialNumber.Text(16), err)
	}
}

func TestLeafRenewal(t *testing.T) {
	renewal := DefaultLeafLifetime / 3 * 2
	tests := []struct {
		name        string
		after       time.Duration
		wantRenewed bool
	}{
		{"an hour before 2/3 of the leaf's life nothing changes", renewal - time.Hour, false},
		{"an hour after 2/3 of the leaf's life both leaves are reissued by the same CA", renewal + time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			clock := newClock()
			m := newManager(t, testOptions(ns, clock))
			ensure(t, m)
			before := resourceVersions(t, ns, ownSecrets...)
			serverBefore := storedCert(t, getSecret(t, ns, ServerSecretName), CertKey)
			clientBefore := storedCert(t, getSecret(t, ns, ClientSecretName), CertKey)

			clock.Set(clock.Now().Add(tt.after))
			ensure(t, m)
			after := resourceVersions(t, ns, ownSecrets...)
			if after[CASecretName] != before[CASecretName] {
				t.Errorf("the CA Secret changed")
			}
			server := storedCert(t, getSecret(t, ns, ServerSecretName), CertKey)
			client := storedCert(t, getSecret(t, ns, ClientSecretName), CertKey)
			for _, got := range []struct {
				name          string
				before, after *x509.Certificate
			}{{"server", serverBefore, server}, {"client", clientBefore, client}} {
				if renewed := !got.before.Equal(got.after); renewed != tt.wantRenewed {
					t.Errorf("%s certificate renewed = %v, want %v", got.name, renewed, tt.wantRenewed)
				}
			}
			served, err := m.configForClient(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !served.Certificates[0].Leaf.Equal(server) {
				t.Errorf("the TLS server presents %s, the Secret holds %s",
					served.Certificates[0].Leaf.SerialNumber.Text(16), server.SerialNumber.Text(16))
			}
			if tt.wantRenewed {
				ca := storedCert(t, getSecret(t, ns, CASecretName), CertKey)
				verify(t, server, ca, clock.Now(), x509.ExtKeyUsageServerAuth)
				if got := server.NotAfter.Sub(clock.Now()); got != DefaultLeafLifetime {
					t.Errorf("renewed certificate valid for %s, want %s", got, DefaultLeafLifetime)
				}
			}
		})
	}
}

func TestEnsureRepairs(t *testing.T) {
	otherKey := func(t *testing.T) []byte {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		b, err := keyPEM(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name    string
		secret  string
		damage  func(t *testing.T, s *corev1.Secret, opts *Options)
		renewed []string // Secrets whose certificate must change
		wantCA  bool     // whether the CA Secret may change
	}{
		{
			name:    "a server key that does not match the certificate is reissued",
			secret:  ServerSecretName,
			damage:  func(t *testing.T, s *corev1.Secret, _ *Options) { s.Data[KeyKey] = otherKey(t) },
			renewed: []string{ServerSecretName},
		},
		{
			name:    "a client certificate that is not PEM is reissued",
			secret:  ClientSecretName,
			damage:  func(_ *testing.T, s *corev1.Secret, _ *Options) { s.Data[CertKey] = []byte("garbage") },
			renewed: []string{ClientSecretName},
		},
		{
			name:    "new xDS Service names reissue the server certificate only",
			secret:  ServerSecretName,
			damage:  func(_ *testing.T, _ *corev1.Secret, o *Options) { o.ServiceNames = []string{"xds.example.internal"} },
			renewed: []string{ServerSecretName},
		},
		{
			name:    "a bundle that lost the CA is rebuilt without a new CA",
			secret:  CASecretName,
			damage:  func(_ *testing.T, s *corev1.Secret, _ *Options) { s.Data[BundleKey] = nil },
			renewed: nil,
			wantCA:  true,
		},
		{
			name:    "an unreadable CA key makes a new CA; the old one stays trusted, so do its leaves",
			secret:  CASecretName,
			damage:  func(_ *testing.T, s *corev1.Secret, _ *Options) { s.Data[KeyKey] = []byte("garbage") },
			renewed: []string{CASecretName},
			wantCA:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			clock := newClock()
			opts := testOptions(ns, clock)
			ensure(t, newManager(t, opts))
			before := map[string]*x509.Certificate{}
			for _, n := range ownSecrets {
				before[n] = storedCert(t, getSecret(t, ns, n), CertKey)
			}
			caVersion := getSecret(t, ns, CASecretName).ResourceVersion

			s := getSecret(t, ns, tt.secret)
			tt.damage(t, s, &opts)
			if err := k8s.Update(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			ensure(t, newManager(t, opts))

			for _, n := range ownSecrets {
				after := getSecret(t, ns, n)
				if renewed := !storedCert(t, after, CertKey).Equal(before[n]); renewed != slices.Contains(tt.renewed, n) {
					t.Errorf("%s renewed = %v, want %v", n, renewed, !renewed)
				}
				if _, err := parseKeyPair(after.Data[CertKey], after.Data[KeyKey]); err != nil {
					t.Errorf("%s after repair: %v", n, err)
				}
			}
			if !tt.wantCA && getSecret(t, ns, CASecretName).ResourceVersion != caVersion {
				t.Errorf("the CA Secret changed")
			}
			ca := getSecret(t, ns, CASecretName)
			bundle := storedCerts(t, ca, BundleKey)
			if !bundle[0].Equal(storedCert(t, ca, CertKey)) {
				t.Errorf("the bundle does not start with the signing CA")
			}
			if _, err := storedCert(t, getSecret(t, ns, ServerSecretName), CertKey).Verify(x509.VerifyOptions{
				Roots: pool(bundle), CurrentTime: clock.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			}); err != nil {
				t.Errorf("the server certificate does not verify under the bundle: %v", err)
			}
		})
	}
}

func TestEnsureClientSecret(t *testing.T) {
	managerNS := newNamespace(t)
	gatewayNS := newNamespace(t)
	clock := newClock()
	m := newManager(t, testOptions(managerNS, clock))
	ctx := context.Background()
	gw := func(name, ns string) *gwapiv1.Gateway {
		return &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(name + "-uid")}}
	}

	if err := m.EnsureClientSecret(ctx, gatewayNS, gw("egress", gatewayNS)); !errors.Is(err, ErrNotEnsured) {
		t.Fatalf("EnsureClientSecret before Ensure = %v, want ErrNotEnsured", err)
	}
	ensure(t, m)

	t.Run("the first Gateway creates a client certificate of its namespace, owned by it", func(t *testing.T) {
		if err := m.EnsureClientSecret(ctx, gatewayNS, gw("egress", gatewayNS)); err != nil {
			t.Fatal(err)
		}
		s := getSecret(t, gatewayNS, EnvoyClientSecretName)
		if s.Type != corev1.SecretTypeTLS || s.Labels[EnvoyClientLabel] != envoyClientLabelValue {
			t.Errorf("type %s, labels %v", s.Type, s.Labels)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Gateway" ||
			s.OwnerReferences[0].UID != "egress-uid" || s.OwnerReferences[0].Controller != nil {
			t.Errorf("owner references = %+v, want the Gateway, not as controller", s.OwnerReferences)
		}
		leaf := storedCert(t, s, CertKey)
		if got, _ := NamespaceOf(leaf); got != gatewayNS {
			t.Errorf("NamespaceOf = %q, want %q", got, gatewayNS)
		}
		verify(t, leaf, storedCert(t, getSecret(t, managerNS, CASecretName), CertKey), clock.Now(), x509.ExtKeyUsageClientAuth)
		if string(s.Data[BundleKey]) != string(getSecret(t, managerNS, CASecretName).Data[BundleKey]) {
			t.Errorf("ca.crt differs from the CA's bundle")
		}
	})

	t.Run("the same Gateway again writes nothing", func(t *testing.T) {
		before := getSecret(t, gatewayNS, EnvoyClientSecretName).ResourceVersion
		if err := m.EnsureClientSecret(ctx, gatewayNS, gw("egress", gatewayNS)); err != nil {
			t.Fatal(err)
		}
		if after := getSecret(t, gatewayNS, EnvoyClientSecretName).ResourceVersion; after != before {
			t.Fatalf("resourceVersion %s -> %s", before, after)
		}
	})

	t.Run("a second Gateway of the namespace becomes a second owner of the same certificate", func(t *testing.T) {
		before := storedCert(t, getSecret(t, gatewayNS, EnvoyClientSecretName), CertKey)
		if err := m.EnsureClientSecret(ctx, gatewayNS, gw("egress-2", gatewayNS)); err != nil {
			t.Fatal(err)
		}
		s := getSecret(t, gatewayNS, EnvoyClientSecretName)
		var owners []string
		for _, o := range s.OwnerReferences {
			owners = append(owners, o.Name)
		}
		if !slices.Equal(owners, []string{"egress", "egress-2"}) {
			t.Errorf("owners = %v", owners)
		}
		if !storedCert(t, s, CertKey).Equal(before) {
			t.Errorf("the certificate changed")
		}
	})

	t.Run("an owner in another namespace is refused", func(t *testing.T) {
		if err := m.EnsureClientSecret(ctx, gatewayNS, gw("elsewhere", managerNS)); err == nil {
			t.Fatal("no error")
		}
	})

	t.Run("Refresh renews the namespace's certificate once it is due and keeps the owners", func(t *testing.T) {
		before := getSecret(t, gatewayNS, EnvoyClientSecretName)
		clock.Set(clock.Now().Add(DefaultLeafLifetime/3*2 + time.Hour))
		if err := m.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		after := getSecret(t, gatewayNS, EnvoyClientSecretName)
		if storedCert(t, after, CertKey).Equal(storedCert(t, before, CertKey)) {
			t.Errorf("the certificate was not renewed")
		}
		if len(after.OwnerReferences) != 2 {
			t.Errorf("owner references = %+v", after.OwnerReferences)
		}
		if got, _ := NamespaceOf(storedCert(t, after, CertKey)); got != gatewayNS {
			t.Errorf("renewed certificate names %q", got)
		}
	})
}

func TestPrivateKeysAreNeverLogged(t *testing.T) {
	ns := newNamespace(t)
	clock := newClock()
	logs := &testenv.LogBuffer{}
	opts := testOptions(ns, clock)
	opts.Log = logs.Logger()
	m := newManager(t, opts)
	ensure(t, m)
	if err := m.EnsureClientSecret(context.Background(), ns, nil); err != nil {
		t.Fatal(err)
	}
	// A key that does not match its certificate is reported (by reason) and replaced.
	server := getSecret(t, ns, ServerSecretName)
	server.Data[KeyKey] = getSecret(t, ns, ClientSecretName).Data[KeyKey]
	if err := k8s.Update(context.Background(), server); err != nil {
		t.Fatal(err)
	}
	clock.Set(clock.Now().Add(DefaultCALifetime / 3 * 2))
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}

	var keys []string
	for _, name := range ownSecrets {
		keys = append(keys, keyFingerprints(t, getSecret(t, ns, name).Data[KeyKey])...)
	}
	keys = append(keys, keyFingerprints(t, getSecret(t, ns, EnvoyClientSecretName).Data[KeyKey])...)
	lines := logs.Lines()
	if len(lines) < 5 {
		t.Fatalf("expected a log line per certificate issued, got %d:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, line := range lines {
		if strings.Contains(line, "PRIVATE KEY") {
			t.Errorf("log line holds a PEM private key: %s", line)
		}
		for _, k := range keys {
			if strings.Contains(line, k) {
				t.Errorf("log line holds private key material: %s", line)
			}
		}
	}
}

// keyFingerprints returns pieces of a PEM key's base64 body, which must appear nowhere.
func keyFingerprints(t *testing.T, keyPEMData []byte) []string {
	t.Helper()
	block, _ := pem.Decode(keyPEMData)
	if block == nil {
		t.Fatal("no PEM key")
	}
	b64 := base64.StdEncoding.EncodeToString(block.Bytes)
	return []string{b64[len(b64)-40:], b64[20:60]}
}
