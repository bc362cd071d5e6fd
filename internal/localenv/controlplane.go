package localenv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

// Defaults of Options.
const (
	DefaultAPIServerPort = 16443
	DefaultEtcdPort      = 12379
	DefaultEtcdPeerPort  = 12380
	DefaultStartTimeout  = 3 * time.Minute
	stopGrace            = 15 * time.Second
)

// Options configure the control plane.
type Options struct {
	// DataDir holds etcd's data (kept between runs), the PKI, logs and the kubeconfig.
	DataDir string
	// AssetsDir holds the etcd and kube-apiserver binaries.
	AssetsDir string
	// Ports on 127.0.0.1.
	APIServerPort, EtcdPort, EtcdPeerPort int
	// Reset empties the data directory first (when Start opens it; see Dir).
	Reset bool
	// StartTimeout bounds the wait for etcd and the API server to become ready.
	StartTimeout time.Duration
	// Dir is the data directory when the caller opened it already (to hold it before
	// starting anything else); Start opens DataDir when nil. Either way Stop closes it.
	Dir *DataDir
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	Dir *DataDir
	// Config reaches the API server as an admin (system:masters).
	Config *rest.Config
	// Server is the API server's URL.
	Server string

	etcd, apiserver *child
}

// Assets returns the paths of etcd and kube-apiserver in dir, or an error naming the
// missing one and how to build it.
func Assets(dir string) (etcd, apiserver string, err error) {
	var paths []string
	for _, name := range []string{"etcd", "kube-apiserver"} {
		p := filepath.Join(dir, name)
		info, statErr := os.Stat(p)
		if statErr != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return "", "", fmt.Errorf("%s not found in %s: run 'make tools' (or pass --assets-dir DIR)", name, dir)
		}
		paths = append(paths, p)
	}
	return paths[0], paths[1], nil
}

// Start takes the data directory and starts etcd, then the API server, and waits until
// both serve. On an error, or when ctx ends first, it stops what it started.
func Start(ctx context.Context, o Options) (*ControlPlane, error) {
	o = o.withDefaults()
	etcdBin, apiBin, err := Assets(o.AssetsDir)
	if err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == nil {
		if dir, err = OpenDataDir(o.DataDir, o.Reset); err != nil {
			return nil, err
		}
	}
	cp := &ControlPlane{Dir: dir, Server: "https://" + loopback(o.APIServerPort)}
	if err := cp.start(ctx, o, etcdBin, apiBin); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return cp, nil
}

func (o Options) withDefaults() Options {
	if o.APIServerPort == 0 {
		o.APIServerPort = DefaultAPIServerPort
	}
	if o.EtcdPort == 0 {
		o.EtcdPort = DefaultEtcdPort
	}
	if o.EtcdPeerPort == 0 {
		o.EtcdPeerPort = DefaultEtcdPeerPort
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	return o
}

func (cp *ControlPlane) start(ctx context.Context, o Options, etcdBin, apiBin string) error {
	if err := CheckPortsFree(
		Port{o.EtcdPort, "etcd clients", "--etcd-port"}, Port{o.EtcdPeerPort, "etcd peers", "--etcd-peer-port"},
		Port{o.APIServerPort, "kube-apiserver", "--apiserver-port"}); err != nil {
		return err
	}
	admin, err := cp.writePKI()
	if err != nil {
		return err
	}
	etcdClient, err := writeEtcdPKI(cp.Dir.Layout)
	if err != nil {
		return err
	}
	if cp.etcd, err = startChild("etcd", etcdBin, etcdArgs(cp.Dir.Layout, o), cp.Dir.Log("etcd")); err != nil {
		return err
	}
	if err := waitServing(ctx, o.StartTimeout, cp.etcd, etcdHealthy(EtcdURL(o.EtcdPort), etcdClient)); err != nil {
		return err
	}
	if cp.apiserver, err = startChild("kube-apiserver", apiBin, apiServerArgs(cp.Dir.Layout, o), cp.Dir.Log("kube-apiserver")); err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(cp.Dir.PKI(), "ca.crt"))
	if err != nil {
		return err
	}
	if cp.Config, err = writeKubeconfig(cp.Dir.Kubeconfig(), cp.Server, caPEM, admin); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return waitServing(ctx, o.StartTimeout, cp.apiserver, apiServerReady(cp.Config, cp.Server))
}

// Stop stops the API server, then etcd, and releases the data directory. It may be
// called more than once.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for _, c := range []*child{cp.apiserver, cp.etcd} {
		if c != nil {
			errs = append(errs, c.stop(stopGrace))
		}
	}
	cp.Dir.Close()
	return errors.Join(errs...)
}

// Exited is closed when etcd or the API server ends on its own.
func (cp *ControlPlane) Exited() <-chan error {
	out := make(chan error, 1)
	go func() {
		select {
		case <-cp.etcd.done:
			out <- cp.etcd.failure(cp.etcd.err)
		case <-cp.apiserver.done:
			out <- cp.apiserver.failure(cp.apiserver.err)
		}
	}()
	return out
}

// writePKI makes a CA, the API server's serving certificate, an admin client
// certificate and the service account signing key, and returns the admin pair.
func (cp *ControlPlane) writePKI() (KeyPair, error) {
	ca, err := NewCA("portcullis-local-ca")
	if err != nil {
		return KeyPair{}, err
	}
	serving, err := ca.Issue(CertSpec{CommonName: "kube-apiserver", Server: true,
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}})
	if err != nil {
		return KeyPair{}, err
	}
	admin, err := ca.Issue(CertSpec{CommonName: "portcullis-local-admin", Organizations: []string{"system:masters"}, Client: true})
	if err != nil {
		return KeyPair{}, err
	}
	saKey, err := newSigningKey()
	if err != nil {
		return KeyPair{}, err
	}
	files := map[string][]byte{"ca.crt": ca.CertPEM, "apiserver.crt": serving.CertPEM, "apiserver.key": serving.KeyPEM, "sa.key": saKey}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(cp.Dir.PKI(), name), data, 0o600); err != nil {
			return KeyPair{}, fmt.Errorf("PKI: %w", err)
		}
	}
	return admin, nil
}

// etcdArgs serve clients and peers over TLS on loopback and require a certificate of
// the etcd CA from both (etcd_pki.go): every process of the machine can reach a
// loopback port, and etcd holds every Secret in plaintext.
func etcdArgs(l Layout, o Options) []string {
	client, peer := EtcdURL(o.EtcdPort), "https://"+loopback(o.EtcdPeerPort)
	pki := func(name string) string { return filepath.Join(l.PKI(), name) }
	return []string{
		"--name=portcullis-local",
		"--data-dir=" + l.Etcd(),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=portcullis-local=" + peer,
		"--client-cert-auth", "--trusted-ca-file=" + pki(etcdCAFile),
		"--cert-file=" + pki(etcdServerCert), "--key-file=" + pki(etcdServerKey),
		"--peer-client-cert-auth", "--peer-trusted-ca-file=" + pki(etcdCAFile),
		"--peer-cert-file=" + pki(etcdServerCert), "--peer-key-file=" + pki(etcdServerKey),
	}
}

// EtcdURL is the URL of etcd's client port.
func EtcdURL(port int) string { return "https://" + loopback(port) }

func apiServerArgs(l Layout, o Options) []string {
	pki := func(name string) string { return filepath.Join(l.PKI(), name) }
	return []string{
		"--etcd-servers=" + EtcdURL(o.EtcdPort),
		"--etcd-cafile=" + pki(etcdCAFile), "--etcd-certfile=" + pki(etcdClientCert), "--etcd-keyfile=" + pki(etcdClientKey),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(o.APIServerPort),
		"--cert-dir=" + l.PKI(),
		"--tls-cert-file=" + pki("apiserver.crt"), "--tls-private-key-file=" + pki("apiserver.key"),
		"--client-ca-file=" + pki("ca.crt"),
		"--service-account-issuer=https://" + loopback(o.APIServerPort),
		"--service-account-key-file=" + pki("sa.key"), "--service-account-signing-key-file=" + pki("sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		// No controller-manager creates the default ServiceAccounts, so the admission
		// plugin that requires them is off (as in envtest).
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
	}
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// waitServing polls check until it succeeds, the process exits, ctx ends or timeout passes.
func waitServing(ctx context.Context, timeout time.Duration, c *child, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		if done, err := c.exited(); done {
			return c.failure(err)
		}
		last := check()
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not ready after %s: %v (log: %s)", c.name, timeout, last, c.logPath)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped while waiting for %s: %w", c.name, context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func etcdHealthy(base string, tlsCfg *tls.Config) func() error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	return func() error { return get(client, base+"/health") }
}

func apiServerReady(cfg *rest.Config, server string) func() error {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return func() error { return err }
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg.Clone()}}
	return func() error { return get(client, server+"/readyz") }
}

func get(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
