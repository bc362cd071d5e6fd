package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/controllers"
	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/controllers/xdscerts"
	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds"
)

// managerFlags are the options of `portcullis manager`.
type managerFlags struct {
	metricsAddr, probeAddr string
	pprofAddr              string
	leaderElect            bool
	namespace              string
	xdsPort                uint
	xdsService             string
	provider               string
	envoyImage             string
	envoyBinary, workDir   string
	hostListenAddress      string
	systemCAFile           string
	managerPodLabels       string
	unrestrictedCallers    string
	envoyCPU, envoyMemory  string
	xdsCerts               xdsCertTimes
	guard                  dnsguard.Config
	// heldPorts are ports of processes beside the manager (`portcullis local`'s control
	// plane), not a flag: with the host provider no listener may take them.
	heldPorts map[uint32]string
	// controlPlanePorts are those of heldPorts that are Portcullis' own (etcd and
	// kube-apiserver of `portcullis local`), which no destination may be either.
	controlPlanePorts map[uint32]string
}

// xdsCertTimes are the xDS certificates' lifetimes and checks (controllers/xdscerts);
// their defaults suit production, shorter ones let a test watch a rotation happen.
type xdsCertTimes struct {
	caLifetime, leafLifetime, propagation, interval time.Duration
}

func registerManagerFlags(fs *flag.FlagSet) *managerFlags {
	f := &managerFlags{guard: dnsguard.DefaultConfig()}
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "", "address of the metrics endpoint (default :8443, HTTPS with authentication, in a cluster; 127.0.0.1:8443, plain HTTP, with --provider host); 0 disables it")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "", "address of Go's /debug/pprof/ profiles (heap, CPU, goroutines), e.g. 127.0.0.1:6060; off when empty (the default): it is unauthenticated")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader: every replica translates and serves xDS, only the leader writes statuses and provisions")
	fs.StringVar(&f.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "the manager's namespace: leader election lease and xDS certificates (default $POD_NAMESPACE)")
	fs.UintVar(&f.xdsPort, "xds-port", 18000, "port of the xDS gRPC server")
	fs.StringVar(&f.xdsService, "xds-service", "portcullis-xds", "name of the Service in front of the xDS server (Envoy pods connect to <name>.<namespace>.svc)")
	fs.StringVar(&f.provider, "provider", "kubernetes", "where Envoy runs: kubernetes (a Deployment per Gateway) or host (an Envoy process per Gateway on this machine)")
	fs.StringVar(&f.envoyImage, "envoy-image", infra.DefaultImage, "Envoy image for the kubernetes provider")
	fs.StringVar(&f.envoyCPU, "envoy-cpu-request", "100m", "CPU request of each Envoy container (kubernetes provider)")
	fs.StringVar(&f.envoyMemory, "envoy-memory-request", "128Mi", "memory request of each Envoy container (kubernetes provider)")
	fs.DurationVar(&f.xdsCerts.caLifetime, "xds-ca-lifetime", xdscerts.DefaultCALifetime, "lifetime of a new xDS CA; it is replaced when 2/3 of it is over")
	fs.DurationVar(&f.xdsCerts.leafLifetime, "xds-cert-lifetime", xdscerts.DefaultLeafLifetime, "lifetime of new xDS server and Envoy client certificates; each is replaced when 2/3 of it is over")
	fs.DurationVar(&f.xdsCerts.propagation, "xds-ca-propagation", xdscerts.DefaultPropagation, "how long a new xDS CA is trusted before it signs certificates, so every peer learns it first")
	fs.DurationVar(&f.xdsCerts.interval, "xds-cert-check-interval", xdscerts.DefaultInterval, "how often the xDS certificates are checked for renewal")
	fs.StringVar(&f.envoyBinary, "envoy-binary", "", "Envoy binary for the host provider (default: bin/envoy-"+EnvoyVersion+", then envoy on PATH)")
	fs.StringVar(&f.hostListenAddress, "host-listen-address", "127.0.0.1", "IP address the host provider's Envoys bind Gateway listeners on (loopback, so the machine's network cannot use them as an egress proxy; in a cluster Envoy binds every interface of its pod)")
	fs.StringVar(&f.workDir, "work-dir", "", "directory of the host provider's Envoy bootstraps and logs (default: a temporary directory)")
	fs.StringVar(&f.systemCAFile, "system-ca-file", "/etc/ssl/certs/ca-certificates.crt", "trust store Envoy uses for Backends that trust the System CAs")
	fs.StringVar(&f.managerPodLabels, "manager-pod-labels", controllers.DefaultManagerPodLabels, "labels of the manager pods, which each Gateway's Envoy egress NetworkPolicy allows xDS traffic to (kubernetes provider)")
	fs.StringVar(&f.unrestrictedCallers, "unrestricted-callers", "", unrestrictedUsage)
	f.guard.RegisterFlags(fs)
	return f
}

// unrestricted parses --unrestricted-callers.
func (f *managerFlags) unrestricted() ([]netip.Prefix, error) {
	return parseUnrestricted(f.unrestrictedCallers)
}

// unrestrictedUsage is the help of --unrestricted-callers, in every subcommand that has it.
const unrestrictedUsage = "comma-separated CIDRs whose callers are served every route of an isolated Gateway, whatever their namespace (local mode: this machine's loopback addresses); none by default"

// parseUnrestricted parses a comma-separated CIDR list.
func parseUnrestricted(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("--unrestricted-callers %q: want CIDRs such as 127.0.0.1/32, separated by commas", s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func (f *managerFlags) validate() error {
	var errs []error
	errs = append(errs, f.xdsCerts.validate()...)
	for _, q := range []struct{ flag, value string }{{"--envoy-cpu-request", f.envoyCPU}, {"--envoy-memory-request", f.envoyMemory}} {
		if _, err := resource.ParseQuantity(q.value); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: not a Kubernetes quantity (e.g. 100m, 128Mi)", q.flag, q.value))
		}
	}
	if f.provider != "kubernetes" && f.provider != "host" {
		errs = append(errs, fmt.Errorf("--provider %q: use kubernetes or host", f.provider))
	}
	if f.provider == "kubernetes" && f.namespace == "" {
		errs = append(errs, errors.New("--namespace is required with --provider kubernetes (or set POD_NAMESPACE)"))
	}
	if _, err := netip.ParseAddr(f.hostListenAddress); err != nil {
		errs = append(errs, fmt.Errorf("--host-listen-address %q: want an IP address such as 127.0.0.1", f.hostListenAddress))
	}
	if f.xdsPort == 0 || f.xdsPort > 65535 {
		errs = append(errs, fmt.Errorf("--xds-port %d: want 1-65535", f.xdsPort))
	}
	if _, err := labels.ConvertSelectorToLabelsMap(f.managerPodLabels); err != nil || f.managerPodLabels == "" {
		errs = append(errs, fmt.Errorf("--manager-pod-labels %q: want key=value pairs separated by commas", f.managerPodLabels))
	}
	if _, err := f.unrestricted(); err != nil {
		errs = append(errs, err)
	}
	if err := f.guard.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// runManager runs the operator until interrupted.
func runManager(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := registerManagerFlags(fs)
	config.RegisterFlags(fs) // --kubeconfig, read by ctrl.GetConfig (local passes its own config)
	opts := zap.Options{}
	opts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "portcullis manager: %v\n", err)
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts), zap.WriteTo(stderr)))
	if err := applyMemoryLimit(ctrl.Log.WithName("manager")); err != nil {
		fmt.Fprintf(stderr, "portcullis manager: %v\n", err)
		return 2
	}
	if err := startManager(ctrl.SetupSignalHandler(), f, ctrl.Log.WithName("manager")); err != nil {
		fmt.Fprintf(stderr, "portcullis manager: %v\n", err)
		return 1
	}
	return 0
}

// Scheme holds every type the manager reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gwapiv1.Install, gwapixv1alpha1.Install, egressv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

func startManager(ctx context.Context, f *managerFlags, log logr.Logger) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no Kubernetes configuration (set KUBECONFIG or run in a cluster): %w", err)
	}
	return startManagerWithConfig(ctx, cfg, f, log)
}

// startManagerWithConfig runs the manager against the API server of cfg until ctx
// ends; `portcullis local` calls it with the config of the API server it started.
func startManagerWithConfig(ctx context.Context, cfg *rest.Config, f *managerFlags, log logr.Logger) error {
	cfg = withoutClientThrottle(cfg)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  Scheme(),
		Metrics:                 metricsOptions(f),
		HealthProbeBindAddress:  f.probeAddr,
		PprofBindAddress:        f.pprofAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        "portcullis-manager.portcullis.io",
		LeaderElectionNamespace: f.namespace,
		// A replica that stops hands the lease over at once instead of after its expiry.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(),
	})
	if err != nil {
		return err
	}
	server := xds.New(log.WithName("xds"))
	provider, grpcOpts, xdsHost, err := setupProvider(ctx, f, mgr, cfg)
	if err != nil {
		return err
	}
	if err := serveXDS(ctx, mgr, server, xdsHost, f.xdsPort, grpcOpts); err != nil {
		return err
	}
	store, policy, err := setupDNSGuard(f)
	if err != nil {
		return err
	}
	clusterCIDRs, err := f.guard.ClusterPrefixes()
	if err != nil {
		return err
	}
	if err := mgr.Add(runnable(func(ctx context.Context) error { return store.Run(ctx) })); err != nil {
		return err
	}
	unrestricted, _ := f.unrestricted() // validated
	r := controllers.NewReconciler(mgr, controllers.Options{
		ControllerName: egress.ControllerName, XDS: server, DNS: store, AddressPolicy: policy, ClusterCIDRs: clusterCIDRs, Provider: provider,
		Envoy: envoyOptions(f), EnvoyEgress: envoyEgress(f),
		Metrics: ctrlmetrics.Registry, Unrestricted: unrestricted, Replica: replicaFromEnv(f.namespace), HeldPorts: hostHeldPorts(f),
		OwnPorts: ownPorts(f, provider), OwnAddresses: ownAddresses(f),
	})
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	log.Info("starting", "provider", f.provider, "xds", net.JoinHostPort(xdsHost, strconv.Itoa(int(f.xdsPort))))
	return mgr.Start(ctx)
}

// envoyOptions are the facts of the Envoy deployment the xDS resources depend on.
func envoyOptions(f *managerFlags) envoyconfig.Options {
	opts := envoyconfig.Options{SystemCAFile: f.systemCAFile}
	if f.provider == "host" {
		opts.ListenAddress = f.hostListenAddress
	}
	return opts
}

// envoyEgress configures the Envoy pods' own egress NetworkPolicy in a cluster; Envoys on
// a host have no pods to confine.
func envoyEgress(f *managerFlags) *controllers.EnvoyEgress {
	if f.provider != "kubernetes" {
		return nil
	}
	podLabels, _ := labels.ConvertSelectorToLabelsMap(f.managerPodLabels) // checked by validate
	return &controllers.EnvoyEgress{ManagerNamespace: f.namespace, ManagerPodLabels: podLabels, XDSPort: int32(f.xdsPort)}
}

// metricsOptions serves metrics over HTTPS with authentication in a cluster; on a host,
// plain HTTP, bound to loopback unless --metrics-bind-address says otherwise (without
// authentication, every interface would show the machine's network the Backends).
func metricsOptions(f *managerFlags) metricsserver.Options {
	addr := f.metricsAddr
	if f.provider == "host" {
		if addr == "" {
			addr = "127.0.0.1:8443"
		}
		return metricsserver.Options{BindAddress: addr}
	}
	if addr == "" {
		addr = ":8443"
	}
	return metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}
}

// hostDefaults fills what the flags leave empty for the host provider: the Envoy beside
// the binary (bin/envoy-<version>) or on PATH, and a fresh temporary work directory.
func hostDefaults(f *managerFlags) (envoy, workDir string, err error) {
	envoy, workDir = f.envoyBinary, f.workDir
	if envoy == "" {
		if envoy, err = findEnvoy(filepath.Dir(executable())); err != nil {
			return "", "", err
		}
	}
	if workDir == "" {
		if workDir, err = os.MkdirTemp("", "portcullis-envoy-"); err != nil {
			return "", "", fmt.Errorf("the host provider's work directory: %w", err)
		}
	}
	return envoy, workDir, nil
}

// setupProvider picks where Envoy runs and how it reaches the xDS server: over mTLS
// through the xDS Service in a cluster, over mTLS on loopback on a host.
func setupProvider(ctx context.Context, f *managerFlags, mgr ctrl.Manager, cfg *rest.Config) (infra.Provider, []grpc.ServerOption, string, error) {
	if f.provider == "host" {
		envoy, workDir, err := hostDefaults(f)
		if err != nil {
			return nil, nil, "", err
		}
		certs, err := hostCerts(ctx, f, mgr, workDir)
		if err != nil {
			return nil, nil, "", err
		}
		p, err := infra.NewHost(infra.HostOptions{EnvoyBinary: envoy, XDSAddress: "127.0.0.1", XDSPort: uint32(f.xdsPort), ClientCerts: certs,
			ListenAddress: f.hostListenAddress, WorkDir: workDir, Log: mgr.GetLogger().WithName("envoy")})
		if err != nil {
			return nil, nil, "", err
		}
		return p, certs.ServerOptions(), "127.0.0.1", mgr.Add(runnable(func(ctx context.Context) error { <-ctx.Done(); return p.Close() }))
	}
	direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, nil, "", err
	}
	certs, err := xdscerts.New(direct, xdscerts.Options{Namespace: f.namespace, ServiceNames: xdscerts.ServiceDNSNames(f.xdsService, f.namespace), Log: mgr.GetLogger().WithName("xds-certs"),
		CALifetime: f.xdsCerts.caLifetime, LeafLifetime: f.xdsCerts.leafLifetime, Propagation: f.xdsCerts.propagation, Interval: f.xdsCerts.interval})
	if err != nil {
		return nil, nil, "", err
	}
	if err := certs.Ensure(ctx); err != nil {
		return nil, nil, "", fmt.Errorf("xDS certificates: %w", err)
	}
	if err := mgr.Add(certs); err != nil {
		return nil, nil, "", err
	}
	p, err := infra.NewKubernetes(mgr.GetClient(), infra.KubernetesOptions{
		Image: f.envoyImage, XDSAddress: f.xdsService + "." + f.namespace + ".svc", XDSPort: uint32(f.xdsPort), ClientSecrets: certs, APIReader: mgr.GetAPIReader(),
		Resources: f.envoyResources()})
	if err != nil {
		return nil, nil, "", err
	}
	return p, certs.ServerOptions(), "", nil
}

// hostPKIDir is the directory, in the host provider's work directory, of the xDS CA,
// the server certificate and the Envoy client certificates (files of mode 0600).
const hostPKIDir = "xds-pki"

// hostCerts keeps the xDS certificates of the host provider in files: every process on
// the machine can reach the loopback xDS port, and only a client holding the
// certificate of a Gateway's namespace may fetch that Gateway's configuration.
func hostCerts(ctx context.Context, f *managerFlags, mgr ctrl.Manager, workDir string) (*xdscerts.Manager, error) {
	certs, err := xdscerts.NewFiles(filepath.Join(workDir, hostPKIDir), xdscerts.Options{Namespace: f.namespace, Log: mgr.GetLogger().WithName("xds-certs"),
		CALifetime: f.xdsCerts.caLifetime, LeafLifetime: f.xdsCerts.leafLifetime, Propagation: f.xdsCerts.propagation, Interval: f.xdsCerts.interval})
	if err != nil {
		return nil, err
	}
	if err := certs.Ensure(ctx); err != nil {
		return nil, fmt.Errorf("xDS certificates: %w", err)
	}
	return certs, mgr.Add(certs)
}

// serveXDS starts the xDS gRPC server with the manager.
func serveXDS(ctx context.Context, mgr ctrl.Manager, server *xds.Server, host string, port uint, opts []grpc.ServerOption) error {
	lis, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("xDS listener: %w", err)
	}
	return mgr.Add(runnable(func(ctx context.Context) error { return server.Serve(ctx, lis, opts...) }))
}

func setupDNSGuard(f *managerFlags) (*dnsguard.Store, *dnsguard.AddressPolicy, error) {
	metrics, err := dnsguard.NewDefaultMetrics()
	if err != nil {
		return nil, nil, err
	}
	resolver, err := dnsguard.NewResolver(f.guard, metrics)
	if err != nil {
		return nil, nil, err
	}
	policy, err := f.guard.AddressPolicy()
	if err != nil {
		return nil, nil, err
	}
	return dnsguard.NewStore(resolver, f.guard, dnsguard.StoreOptions{Metrics: metrics}), policy, nil
}

// runnable adapts a function to a manager Runnable.
type runnable func(context.Context) error

func (r runnable) Start(ctx context.Context) error { return r(ctx) }

// NeedLeaderElection is false: the xDS server and the DNS guard run on every replica,
// which all translate and serve their Envoys (controllers/leader.go).
func (r runnable) NeedLeaderElection() bool { return false }

// replicaFromEnv names this replica's Pod from the downward API (config/manager sets
// POD_NAME and POD_UID); nil outside a cluster, where there is one replica.
func replicaFromEnv(namespace string) *controllers.Replica {
	name, uid := os.Getenv("POD_NAME"), os.Getenv("POD_UID")
	if name == "" || uid == "" || namespace == "" {
		return nil
	}
	return &controllers.Replica{Namespace: namespace, Pod: name, UID: types.UID(uid)}
}

// envoyResources are the Envoy container's requests (validated). No limit: a throttled
// or OOM-killed Envoy drops every tenant's connections at once.
func (f *managerFlags) envoyResources() *corev1.ResourceRequirements {
	return &corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(f.envoyCPU),
		corev1.ResourceMemory: resource.MustParse(f.envoyMemory),
	}}
}

// validate refuses times the rotation cannot work with: a certificate must outlive the
// checks that renew it, and a CA must outlive a leaf plus the propagation before it
// signs one.
func (x xdsCertTimes) validate() []error {
	var errs []error
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--xds-ca-lifetime", x.caLifetime}, {"--xds-cert-lifetime", x.leafLifetime}, {"--xds-ca-propagation", x.propagation}, {"--xds-cert-check-interval", x.interval}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s %s: want a positive duration", d.flag, d.v))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if x.leafLifetime < 3*x.interval {
		errs = append(errs, fmt.Errorf("--xds-cert-lifetime %s: want at least three --xds-cert-check-interval (%s), or certificates expire between checks", x.leafLifetime, x.interval))
	}
	if x.caLifetime < x.leafLifetime+x.propagation {
		errs = append(errs, fmt.Errorf("--xds-ca-lifetime %s: want at least --xds-cert-lifetime plus --xds-ca-propagation (%s)", x.caLifetime, x.leafLifetime+x.propagation))
	}
	return errs
}
