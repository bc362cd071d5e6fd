package infra

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/xdscerts"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
)

// Defaults of HostOptions.
const (
	DefaultStopGrace = 5 * time.Second
	hostLoopback     = "127.0.0.1"
)

// HostOptions configure the host provider.
type HostOptions struct {
	// EnvoyBinary is the path of the envoy executable.
	EnvoyBinary string
	// XDSAddress and XDSPort are where the xDS server listens (loopback); XDSAddress
	// defaults to 127.0.0.1.
	XDSAddress string
	XDSPort    uint32
	// ClientCerts, when set (an *xdscerts.Manager made by xdscerts.NewFiles), gives each
	// Envoy the client certificate of its Gateway's namespace, and Envoy reaches the xDS
	// server with mutual TLS. When nil Envoy connects in plaintext, which only a server
	// without credentials accepts (tests of the provider alone).
	ClientCerts HostClientCerts
	// ListenAddress is the IP the Envoys bind Gateway listeners on (envoyconfig.Options),
	// reported in the Gateway's status.addresses; loopback of its family when empty or
	// unspecified.
	ListenAddress string
	// WorkDir holds one directory per Gateway, <namespace>_<name>, with bootstrap.yaml,
	// envoy.log and MetricsAddressFile.
	WorkDir string
	// Log receives starts, exits and restarts.
	Log logr.Logger
	// AdminPortBase, when not 0, makes admin and metrics ports predictable: each Envoy
	// takes the lowest two free ports from it. When 0 each takes ports the kernel picks.
	AdminPortBase uint32
	// LogLevel is Envoy's --log-level; "info" when empty.
	LogLevel string
	// Concurrency is Envoy's --concurrency; Envoy's default (one per CPU) when 0.
	Concurrency int
	// StopGrace is how long Envoy may take to exit after SIGTERM before SIGKILL;
	// DefaultStopGrace when 0.
	StopGrace time.Duration
	// RestartBackoff is the first wait before restarting an Envoy that exited (doubling
	// up to MaxRestartBackoff); defaults 250 ms and 30 s.
	RestartBackoff, MaxRestartBackoff time.Duration
}

// HostClientCerts keeps the xDS client certificates of the host's Envoys in files.
type HostClientCerts interface {
	ClientSecretEnsurer
	ClientFiles(namespace string) (xdscerts.ClientFiles, error)
}

var _ HostClientCerts = (*xdscerts.Manager)(nil)

// Host runs one Envoy process per Gateway on this machine and restarts it when it
// exits. Listeners come by xDS, so a Gateway's listener changes need no restart.
type Host struct {
	opts HostOptions

	mu      sync.Mutex
	envoys  map[string]*hostEnvoy // by "<namespace>/<name>"
	closed  bool
	closing sync.WaitGroup
}

var _ Provider = (*Host)(nil)

// NewHost returns the host provider.
func NewHost(opts HostOptions) (*Host, error) {
	if opts.EnvoyBinary == "" || opts.WorkDir == "" || opts.XDSPort == 0 {
		return nil, errors.New("infra: the host provider needs the Envoy binary, a work directory and the xDS port")
	}
	if opts.XDSAddress == "" {
		opts.XDSAddress = hostLoopback
	}
	if opts.LogLevel == "" {
		opts.LogLevel = defaultLogLevel
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.RestartBackoff == 0 {
		opts.RestartBackoff = 250 * time.Millisecond
	}
	if opts.MaxRestartBackoff == 0 {
		opts.MaxRestartBackoff = 30 * time.Second
	}
	if err := os.MkdirAll(opts.WorkDir, 0o750); err != nil {
		return nil, fmt.Errorf("infra: work directory: %w", err)
	}
	// A previous process killed before it could stop its Envoys left their address
	// files; no Envoy of this process runs yet.
	dirs, _ := filepath.Glob(HostDir(opts.WorkDir, "*", "*"))
	for _, dir := range dirs {
		removeAddressFiles(dir)
	}
	return &Host{opts: opts, envoys: map[string]*hostEnvoy{}}, nil
}

// Ensure starts the Gateway's Envoy unless it runs already with the same bootstrap
// and xDS client certificate; a changed bootstrap, or a renewed certificate, restarts
// it. It returns 127.0.0.1, where Envoy binds the Gateway's listeners.
//
// Envoy reads the certificate files of its bootstrap once, at start: without the
// restart it would go on presenting the old certificate at every reconnection, and be
// refused once that expires (the in-cluster provider rolls the pods for the same
// reason). Renewal comes at 2/3 of --xds-cert-lifetime, so this is rare.
func (h *Host) Ensure(ctx context.Context, gw Gateway) ([]gwapiv1.GatewayStatusAddress, error) {
	if err := gw.validate(); err != nil {
		return nil, err
	}
	tls, err := h.clientTLS(ctx, gw.Namespace)
	if err != nil {
		return nil, err
	}
	cert, err := certificateDigest(tls)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("infra: the host provider is closed")
	}
	e := h.envoys[gw.key()]
	ports, err := h.portsFor(e, gw)
	if err != nil {
		return nil, err
	}
	boot, err := bootstrap.YAML(bootstrap.Options{
		Gateway:        gw.key(),
		NodeID:         "host/" + gw.key(),
		XDSAddress:     h.opts.XDSAddress,
		XDSPort:        h.opts.XDSPort,
		AdminPort:      ports.admin,
		MetricsPort:    ports.metrics,
		MetricsAddress: hostLoopback,
		TLS:            tls,
	})
	if err != nil {
		return nil, err
	}
	switch {
	case e == nil:
		e, err = h.start(gw.key(), h.dir(gw.Namespace, gw.Name), boot, ports)
		if err != nil {
			return nil, err
		}
		e.cert = cert
		h.envoys[gw.key()] = e
	case !bytes.Equal(e.bootstrap, boot) || e.cert != cert:
		why := "Envoy bootstrap changed; restarting"
		if bytes.Equal(e.bootstrap, boot) {
			why = "xDS client certificate renewed; restarting Envoy to present it"
		}
		h.opts.Log.Info(why, "gateway", gw.key())
		e.stop()
		if e, err = h.start(gw.key(), e.dir, boot, ports); err != nil {
			delete(h.envoys, gw.key())
			return nil, err
		}
		e.cert = cert
		h.envoys[gw.key()] = e
	}
	return []gwapiv1.GatewayStatusAddress{{Type: addressType(gwapiv1.IPAddressType), Value: h.statusAddress()}}, nil
}

// clientTLS has ClientCerts keep the client certificate of the namespace's Envoys and
// names its files for the bootstrap; nil without ClientCerts.
func (h *Host) clientTLS(ctx context.Context, namespace string) (*bootstrap.XDSClientTLS, error) {
	if h.opts.ClientCerts == nil {
		return nil, nil
	}
	if err := h.opts.ClientCerts.EnsureClientSecret(ctx, namespace, nil); err != nil {
		return nil, fmt.Errorf("infra: the xDS client certificate of namespace %s: %w", namespace, err)
	}
	files, err := h.opts.ClientCerts.ClientFiles(namespace)
	if err != nil {
		return nil, fmt.Errorf("infra: %w", err)
	}
	return &bootstrap.XDSClientTLS{CertFile: files.Cert, KeyFile: files.Key, CAFile: files.CA, SNI: xdscerts.HostServerName}, nil
}

// certificateDigest digests the public files Envoy's xDS client TLS names (its
// certificate and the CA bundle); "" without TLS.
func certificateDigest(t *bootstrap.XDSClientTLS) (string, error) {
	if t == nil {
		return "", nil
	}
	sum := sha256.New()
	for _, f := range []string{t.CertFile, t.CAFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("infra: the xDS client certificate: %w", err)
		}
		sum.Write(b)
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// statusAddress is where clients on this machine reach the Gateway's listeners: the
// listen address, or loopback of its family when it is every interface (Envoy binds
// "::" IPv6-only, so 127.0.0.1 would not reach it).
func (h *Host) statusAddress() string {
	ip, err := netip.ParseAddr(h.opts.ListenAddress)
	switch {
	case err != nil:
		return hostLoopback
	case ip.IsUnspecified() && ip.Is6():
		return netip.IPv6Loopback().String()
	case ip.IsUnspecified():
		return hostLoopback
	}
	return ip.String()
}

// Delete stops the Gateway's Envoy and removes its directory.
func (h *Host) Delete(_ context.Context, namespace, name string) error {
	key := namespace + "/" + name
	h.mu.Lock()
	e := h.envoys[key]
	delete(h.envoys, key)
	h.mu.Unlock()
	if e == nil {
		return nil
	}
	e.stop()
	if err := os.RemoveAll(e.dir); err != nil {
		return fmt.Errorf("infra: remove %s: %w", e.dir, err)
	}
	return nil
}

// Close stops every Envoy (their directories and logs stay) and refuses later Ensures.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	envoys := h.envoys
	h.envoys = map[string]*hostEnvoy{}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range envoys {
		wg.Go(e.stop)
	}
	wg.Wait()
	return nil
}

// AdminURL is the base URL of the Gateway's Envoy admin interface; false when the
// Gateway has no Envoy here.
func (h *Host) AdminURL(namespace, name string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.envoys[namespace+"/"+name]
	if e == nil {
		return "", false
	}
	return "http://" + loopbackAddress(e.ports.admin), true
}

// MetricsURL is the URL Prometheus scrapes for the Gateway's Envoy (GET only; the rest
// of the admin interface is not served there); false when the Gateway has no Envoy
// here. The Gateway's directory holds its host:port in MetricsAddressFile.
func (h *Host) MetricsURL(namespace, name string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.envoys[namespace+"/"+name]
	if e == nil {
		return "", false
	}
	return e.metricsURL(), true
}

// OwnPorts are the admin and metrics ports of every Envoy running here, each with the
// Envoy it belongs to: destinations no Backend may be (translate.Options.OwnPorts).
func (h *Host) OwnPorts() map[uint32]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[uint32]string{}
	for key, e := range h.envoys {
		out[e.ports.admin] = "the admin interface of the Envoy of " + key
		out[e.ports.metrics] = "the metrics listener of the Envoy of " + key
	}
	return out
}

// PID is the process ID of the Gateway's Envoy, 0 while it is not running (or between
// an exit and its restart).
func (h *Host) PID(namespace, name string) int {
	h.mu.Lock()
	e := h.envoys[namespace+"/"+name]
	h.mu.Unlock()
	if e == nil {
		return 0
	}
	return e.pid()
}

// LogPath is the file holding the Gateway's Envoy output.
func (h *Host) LogPath(namespace, name string) string {
	return filepath.Join(h.dir(namespace, name), "envoy.log")
}

func (h *Host) dir(namespace, name string) string {
	return HostDir(h.opts.WorkDir, namespace, name)
}

// HostDir is a Gateway's directory in the host provider's work directory: its
// bootstrap, Envoy log, audit log and the address files.
func HostDir(workDir, namespace, name string) string {
	return filepath.Join(workDir, namespace+"_"+name)
}

// hostPorts are the loopback ports of one Envoy besides its Gateway listeners.
type hostPorts struct {
	admin, metrics uint32
}

// portsFor keeps the ports of a running Envoy, so that a restart does not move its
// metrics for Prometheus, or picks two new ones, never one of the Gateway's listener
// ports (free until Envoy binds them, so the kernel may offer them). h.mu is held.
func (h *Host) portsFor(e *hostEnvoy, gw Gateway) (hostPorts, error) {
	if e != nil {
		return e.ports, nil
	}
	var listeners []uint32
	for _, l := range gw.Listeners {
		listeners = append(listeners, l.EnvoyPort)
	}
	admin, err := h.pickPort(listeners...)
	if err != nil {
		return hostPorts{}, err
	}
	metrics, err := h.pickPort(append(listeners, admin)...)
	if err != nil {
		return hostPorts{}, err
	}
	return hostPorts{admin: admin, metrics: metrics}, nil
}

// pickPort finds a free loopback port that neither another Envoy nor taken uses: from
// AdminPortBase upwards, or one the kernel picks. h.mu is held.
func (h *Host) pickPort(taken ...uint32) (uint32, error) {
	used := map[uint32]bool{}
	for _, p := range taken {
		used[p] = true
	}
	for _, e := range h.envoys {
		used[e.ports.admin], used[e.ports.metrics] = true, true
	}
	if h.opts.AdminPortBase == 0 {
		return kernelPort(used)
	}
	for p := h.opts.AdminPortBase; p < h.opts.AdminPortBase+1000 && p <= 65535; p++ {
		if used[p] {
			continue
		}
		if port, err := freeLoopbackPort(p); err == nil {
			return port, nil
		}
	}
	return 0, fmt.Errorf("infra: no free loopback port from %d", h.opts.AdminPortBase)
}

// kernelPort asks the kernel for free ports until one is not in used: a port just
// picked for another listener of the same Envoy is free until Envoy binds it.
func kernelPort(used map[uint32]bool) (uint32, error) {
	for range 10 {
		port, err := freeLoopbackPort(0)
		if err != nil || !used[port] {
			return port, err
		}
	}
	return 0, errors.New("infra: the kernel keeps picking loopback ports already taken")
}

func loopbackAddress(port uint32) string {
	return net.JoinHostPort(hostLoopback, strconv.Itoa(int(port)))
}

// freeLoopbackPort checks that port (0: any) can be bound on 127.0.0.1 and returns it.
func freeLoopbackPort(port uint32) (uint32, error) {
	l, err := net.Listen("tcp", loopbackAddress(port))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return uint32(l.Addr().(*net.TCPAddr).Port), nil
}
