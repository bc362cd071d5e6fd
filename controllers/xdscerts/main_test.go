package xdscerts

import (
	"context"
	"crypto/x509"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// k8s reads and writes the test API server with a scheme that knows Gateways (the
// owners of Envoy client Secrets).
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithAPIServer(m, func(api *testenv.APIServer) {
		scheme := testenv.Scheme()
		if err := gwapiv1.Install(scheme); err != nil {
			panic(err)
		}
		c, err := client.New(api.Config, client.Options{Scheme: scheme})
		if err != nil {
			panic(err)
		}
		k8s = c
	}))
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: time.Now().Truncate(time.Second)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "xdscerts-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func testOptions(ns string, clock *fakeClock) Options {
	return Options{
		Namespace:    ns,
		ServiceNames: ServiceDNSNames("portcullis-xds", ns),
		Clock:        clock.Now,
	}
}

func newManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	m, err := New(k8s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ensure(t *testing.T, m *Manager) {
	t.Helper()
	if err := m.Ensure(context.Background()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
}

func getSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("get Secret %s/%s: %v", ns, name, err)
	}
	return s
}

// resourceVersions returns the resourceVersion of each named Secret of ns.
func resourceVersions(t *testing.T, ns string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		out[n] = getSecret(t, ns, n).ResourceVersion
	}
	return out
}

// storedCert parses the first certificate under key of a Secret.
func storedCert(t *testing.T, s *corev1.Secret, key string) *x509.Certificate {
	t.Helper()
	certs := storedCerts(t, s, key)
	return certs[0]
}

func storedCerts(t *testing.T, s *corev1.Secret, key string) []*x509.Certificate {
	t.Helper()
	certs, err := parseCerts(s.Data[key])
	if err != nil {
		t.Fatalf("Secret %s/%s %s: %v", s.Namespace, s.Name, key, err)
	}
	return certs
}

func serials(certs []*x509.Certificate) []string {
	var out []string
	for _, c := range certs {
		out = append(out, c.SerialNumber.Text(16))
	}
	return out
}

var ownSecrets = []string{CASecretName, ServerSecretName, ClientSecretName}
