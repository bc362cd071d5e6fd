// Package xdscerts keeps the certificates of the mutual TLS between the Envoys and the
// xDS server in a cluster: a CA, the xDS server's serving certificate, and client
// certificates for the Envoys, all ECDSA P-256 and stored in Secrets.
//
// Every certificate is replaced once 2/3 of its life is over. A new CA joins the trust
// bundle (ca.crt) next to the old one, which stays trusted until it expires; leaves are
// signed by the new CA only after it has been trusted for Options.Propagation, so the
// peers learn the new CA before they meet a certificate it signed.
//
// Each Envoy client certificate names the namespace of the Gateways it serves (a URI
// SAN, see NamespaceOf); NodeGuard makes the xDS server hold Envoys to it.
//
// Every replica of the manager may run a Manager: writes carry the resourceVersion they
// were decided on, and a replica that loses a race re-reads and decides again.
//
// On a host (the host provider, `portcullis local`) NewFiles keeps the same
// certificates in files of mode 0600 instead of Secrets (files.go).
//
// Private keys never appear in logs, events or errors.
package xdscerts

import (
	"context"
	"crypto/tls"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Defaults of Options.
const (
	DefaultCALifetime   = 365 * 24 * time.Hour
	DefaultLeafLifetime = 90 * 24 * time.Hour
	DefaultPropagation  = time.Hour
	DefaultInterval     = time.Minute
)

// Options configure a Manager.
type Options struct {
	// Namespace is the manager's own namespace, where the CA, server and client Secrets live.
	Namespace string
	// ServiceNames are the DNS SANs of the xDS server's certificate: the names Envoys
	// use to reach it (see ServiceDNSNames). At least one.
	ServiceNames []string
	// Clock returns the current time; time.Now when nil.
	Clock func() time.Time
	// CALifetime and LeafLifetime are how long new certificates are valid; a leaf never
	// outlives its CA. Defaults: DefaultCALifetime, DefaultLeafLifetime.
	CALifetime, LeafLifetime time.Duration
	// Propagation is how long a new CA is trusted before it signs leaves; DefaultPropagation.
	Propagation time.Duration
	// Interval is how often Run re-checks the Secrets; DefaultInterval.
	Interval time.Duration
	// Log receives one line per certificate issued and per failed check.
	Log logr.Logger
}

// Manager keeps the xDS certificates and serves them to the xDS server.
type Manager struct {
	c     client.Client // nil with files (NewFiles)
	store secretStore
	opts  Options
	state atomic.Pointer[state]
}

// state is what the last successful Ensure found, used by the TLS server and to sign
// Envoy client certificates.
type state struct {
	ca     caState
	server tls.Certificate
}

// New returns a Manager. c should read from the API server directly (not from an
// informer cache): Ensure runs before the controller manager's caches start, and
// Refresh lists Secrets in every namespace. Its scheme must know the owners passed to
// EnsureClientSecret (the Gateway API types).
func New(c client.Client, opts Options) (*Manager, error) {
	if opts.Namespace == "" {
		return nil, errors.New("xdscerts: the manager's namespace is empty")
	}
	m, err := withStore(apiStore{c: c}, opts)
	if err != nil {
		return nil, err
	}
	m.c = c
	return m, nil
}

func withStore(store secretStore, opts Options) (*Manager, error) {
	if len(opts.ServiceNames) == 0 {
		return nil, errors.New("xdscerts: no DNS name for the xDS server's certificate")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	opts.CALifetime = orDefault(opts.CALifetime, DefaultCALifetime)
	opts.LeafLifetime = orDefault(opts.LeafLifetime, DefaultLeafLifetime)
	opts.Propagation = orDefault(opts.Propagation, DefaultPropagation)
	opts.Interval = orDefault(opts.Interval, DefaultInterval)
	return &Manager{store: store, opts: opts}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Ensure creates or renews the CA, server and client Secrets of the manager's namespace
// (with files: the CA and the server certificate) and loads them for
// ServerCredentials. Calling it again with nothing due writes nothing.
func (m *Manager) Ensure(ctx context.Context) error {
	ca, err := m.ensureCA(ctx)
	if err != nil {
		return err
	}
	server, err := m.ensureLeaf(ctx, m.own(ServerSecretName), serverSpec(m.opts.ServiceNames), ca, nil)
	if err != nil {
		return err
	}
	if m.c != nil { // with files there are no pods in the manager's namespace to serve
		if _, err := m.ensureLeaf(ctx, m.own(ClientSecretName), clientSpec(m.opts.Namespace), ca, nil); err != nil {
			return err
		}
	}
	m.state.Store(&state{ca: ca, server: tls.Certificate{
		Certificate: [][]byte{server.cert.Raw},
		PrivateKey:  server.key,
		Leaf:        server.cert,
	}})
	return nil
}

// Refresh runs Ensure, then renews every Envoy client Secret (EnvoyClientSecretName in
// any namespace, found by EnvoyClientLabel).
func (m *Manager) Refresh(ctx context.Context) error {
	if err := m.Ensure(ctx); err != nil {
		return err
	}
	namespaces, err := m.store.envoyClientNamespaces(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range namespaces {
		errs = append(errs, m.EnsureClientSecret(ctx, ns, nil))
	}
	return errors.Join(errs...)
}

// Run calls Refresh every Options.Interval until ctx is done. Failures are logged and
// retried at the next tick.
func (m *Manager) Run(ctx context.Context) {
	ticker := time.NewTicker(m.opts.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if err := m.Refresh(ctx); err != nil && ctx.Err() == nil {
				m.opts.Log.Error(err, "checking the xDS certificates failed; retrying at the next tick", "interval", m.opts.Interval)
			}
		}
	}
}

// Start makes the Manager a controller-runtime Runnable: Refresh, then Run.
func (m *Manager) Start(ctx context.Context) error {
	if err := m.Refresh(ctx); err != nil {
		return err
	}
	m.Run(ctx)
	return nil
}

// NeedLeaderElection is false: every replica serves xDS and so keeps its certificates.
func (m *Manager) NeedLeaderElection() bool { return false }

func (m *Manager) own(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: m.opts.Namespace, Name: name}
}

// ensureCA creates, rotates or repairs the CA Secret and returns the CA in force.
func (m *Manager) ensureCA(ctx context.Context) (caState, error) {
	var ca caState
	err := m.store.sync(ctx, m.own(CASecretName), func(s *corev1.Secret) (bool, error) {
		d, err := planCA(s.Data, m.opts.Clock(), m.opts.CALifetime)
		if err != nil {
			return false, err
		}
		ca = d.state
		changed := setLabels(s, componentLabels("xds-ca"))
		if d.reason == "" {
			return changed, nil
		}
		if s.Data, err = caData(d.state); err != nil {
			return false, err
		}
		m.opts.Log.Info("xDS CA updated", "secret", CASecretName, "reason", d.reason, "newCA", d.newCA,
			"serial", d.state.signer.cert.SerialNumber.Text(16), "notAfter", d.state.signer.cert.NotAfter, "trusted", len(d.state.bundle))
		return true, nil
	})
	return ca, err
}

// ensureLeaf creates, renews or refreshes the bundle of one leaf Secret; extra adds
// labels or owners. It returns the leaf in force.
func (m *Manager) ensureLeaf(ctx context.Context, key types.NamespacedName, spec leafSpec, ca caState, extra mutateFunc) (keyPair, error) {
	var pair keyPair
	err := m.store.sync(ctx, key, func(s *corev1.Secret) (bool, error) {
		now := m.opts.Clock()
		d := planLeaf(s.Data, spec, ca, now, m.opts.Propagation, m.opts.LeafLifetime)
		changed := setLabels(s, componentLabels(componentOf(key.Name)))
		if extra != nil {
			c, err := extra(s)
			if err != nil {
				return false, err
			}
			changed = changed || c
		}
		pair = d.pair
		switch {
		case d.reissue:
			var err error
			if pair, err = issue(ca.signer, spec, now, m.opts.LeafLifetime); err != nil {
				return false, err
			}
			m.opts.Log.Info("xDS certificate issued", "secret", key.String(), "reason", d.reason,
				"serial", pair.cert.SerialNumber.Text(16), "notAfter", pair.cert.NotAfter)
		case d.refreshBundle:
			m.opts.Log.Info("xDS trust bundle refreshed", "secret", key.String(), "trusted", len(ca.bundle))
		default:
			return changed, nil
		}
		data, err := leafData(pair, ca)
		if err != nil {
			return false, err
		}
		s.Data = data
		return true, nil
	})
	return pair, err
}

func componentLabels(component string) map[string]string {
	return map[string]string{managedByLabel: managedByValue, componentLabel: component}
}

func componentOf(secretName string) string {
	switch secretName {
	case ServerSecretName:
		return "xds-server"
	case CASecretName:
		return "xds-ca"
	default:
		return "xds-client"
	}
}
