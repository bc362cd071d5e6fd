package samples

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/portcullis-io/portcullis/controllers"
	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// manager is the real Portcullis manager wired as `portcullis manager --provider host`
// wires it (cmd/portcullis/manager.go): the xDS server on loopback, the DNS guard, the
// reconciler, and an Envoy process per Gateway on this machine.
type manager struct {
	host    *infra.Host
	logs    *testenv.LogBuffer
	workDir string
}

// startManager runs the manager against the API server until the test ends, with the DNS
// guard asking only dnsServer and allowing 127.0.0.0/8 (test only: the samples' outside
// names resolve to loopback here).
func startManager(t *testing.T, api *testenv.APIServer, dnsServer string) *manager {
	t.Helper()
	m := &manager{logs: &testenv.LogBuffer{}, workDir: t.TempDir()}
	log := m.logs.Logger()
	ctrllog.SetLogger(log) // controller-runtime's own parts log through the global logger
	ctx, cancel := context.WithCancel(context.Background())

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	xdsPort := uint32(lis.Addr().(*net.TCPAddr).Port)
	server := xds.New(log.WithName("xds"))
	m.host, err = infra.NewHost(infra.HostOptions{
		EnvoyBinary: testenv.EnvoyBinary(t), XDSAddress: "127.0.0.1", XDSPort: xdsPort,
		WorkDir: m.workDir, Log: log.WithName("envoy"), Concurrency: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	store, policy := newGuard(t, dnsServer)
	mgr, err := ctrl.NewManager(api.Config, ctrl.Options{Scheme: api.Scheme, Logger: log,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// go test -count=N runs the test again in this process, where the controller's
		// name is still registered.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	r := controllers.NewReconciler(mgr, controllers.Options{
		ControllerName: egress.ControllerName, XDS: server, DNS: store, AddressPolicy: policy, Provider: m.host,
		Envoy: envoyconfig.Options{SystemCAFile: envoyconfig.DefaultSystemCAFile},
		// The samples' requests come from this machine, as in local mode.
		Unrestricted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = server.Serve(ctx, lis) }()
	go func() { _ = store.Run(ctx) }()
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the manager did not stop within 30s")
		}
		_ = m.host.Close() // stops every Envoy before the API server goes away
	})
	return m
}

// newGuard is the DNS guard of the manager, with the test's DNS server and policy.
func newGuard(t *testing.T, dnsServer string) (*dnsguard.Store, *dnsguard.AddressPolicy) {
	t.Helper()
	cfg := dnsguard.DefaultConfig()
	cfg.DNSServers, cfg.AllowCIDRs, cfg.IPFamily = []string{dnsServer}, []string{"127.0.0.0/8"}, dnsguard.IPv4
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	policy, err := cfg.AddressPolicy()
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := dnsguard.NewResolver(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return dnsguard.NewStore(resolver, cfg, dnsguard.StoreOptions{}), policy
}

// envoyLogs returns the output of every Envoy the host provider ran, by file.
func (m *manager) envoyLogs(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(m.workDir, "*", "envoy.log"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(data)
	}
	return out
}
