package infra

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis-io/portcullis/controllers/xdscerts"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestPodBootstrapWithRealEnvoy runs the real Envoy on the bootstrap the Kubernetes
// provider puts in the ConfigMap (only the file directory and ports differ), with the
// files of the Envoy client Secret that xdscerts keeps, against the xDS server guarded
// by xdscerts' server options: it proves the mTLS wiring and the readiness endpoint the
// pods are probed on.
func TestPodBootstrapWithRealEnvoy(t *testing.T) {
	ctx := context.Background()
	certs, _ := xdsCerts(t)
	gatewayNS := newNamespace(t)
	if err := certs.EnsureClientSecret(ctx, gatewayNS, nil); err != nil {
		t.Fatal(err)
	}
	certDir := writeSecretFiles(t, gatewayNS, xdscerts.EnvoyClientSecretName)

	server := xds.New(testr.New(t))
	xdsPort := serveXDS(t, server, certs)
	gateway := gatewayNS + "/egress"
	readiness, metrics := xdstest.FreePort(t), xdstest.FreePort(t)
	envoy := xdstest.Start(t, xdstest.Config{
		Bootstrap: func(adminPort uint32) ([]byte, error) {
			return podBootstrap{
				gateway: gateway, xdsAddress: "127.0.0.1", xdsPort: xdsPort, serverName: testXDSName,
				certDir: certDir, adminPort: adminPort, readinessPort: readiness, metricsPort: metrics,
			}.yaml()
		},
		Args: []string{"--service-node", "egress-7d9f-abcde", "--disable-hot-restart"},
	})
	readyURL := fmt.Sprintf("http://127.0.0.1:%d", readiness)

	xdstest.WaitFor(t, xdstest.Timeout, "Envoy to connect over mTLS", func() error {
		if envs := server.Status(gateway).Envoys; len(envs) != 1 || envs[0].NodeID != "egress-7d9f-abcde" {
			return fmt.Errorf("connected Envoys: %+v", envs)
		}
		return nil
	})

	steps := []struct {
		name     string
		before   func(t *testing.T)
		path     string
		wantCode int // 0: no HTTP answer at all
	}{
		{"before its first configuration Envoy answers no readiness probe", nil, ReadinessPath, 0},
		{"once configured by xDS it is ready", func(t *testing.T) {
			if _, _, err := server.Publish(gateway, envoyconfig.Resources{}); err != nil {
				t.Fatal(err)
			}
			envoy.WaitReady()
		}, ReadinessPath, http.StatusOK},
		{"any other path of the readiness listener is not found", nil, "/config_dump", http.StatusNotFound},
		{"a health check failure set through the admin interface makes it unready", func(t *testing.T) {
			resp, err := http.Post(envoy.AdminURL()+"/healthcheck/fail", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}, ReadinessPath, http.StatusServiceUnavailable},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.before != nil {
				step.before(t)
			}
			code, err := probe(readyURL + step.path)
			if step.wantCode == 0 {
				if err == nil {
					t.Fatalf("the probe got HTTP %d, want no answer", code)
				}
				t.Logf("probe: %v", err)
				return
			}
			if err != nil || code != step.wantCode {
				t.Fatalf("probe = %d, %v; want %d", code, err, step.wantCode)
			}
		})
	}
	// test/e2e proves what the metrics listener serves; here, that the pod's has it.
	t.Run("the metrics listener serves the Prometheus stats and no other admin path", func(t *testing.T) {
		metricsURL := fmt.Sprintf("http://127.0.0.1:%d", metrics)
		for path, want := range map[string]int{MetricsPath: http.StatusOK, "/config_dump": http.StatusNotFound} {
			if code, err := probe(metricsURL + path); err != nil || code != want {
				t.Errorf("GET %s = %d, %v; want %d", path, code, err, want)
			}
		}
	})
}

// probe GETs url as the kubelet would (a short timeout).
func probe(url string) (int, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// writeSecretFiles writes a Secret's keys as files, as the kubelet mounts them.
func writeSecretFiles(t *testing.T, namespace, name string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := k8s(t).Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for k, v := range s.Data {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serveXDS serves server on a loopback port, with the certificate manager's options
// when certs is not nil, until the test ends.
func serveXDS(t *testing.T, server *xds.Server, certs *xdscerts.Manager) uint32 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		if certs != nil {
			done <- server.Serve(ctx, lis, certs.ServerOptions()...)
			return
		}
		done <- server.Serve(ctx, lis)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("xDS server: %v", err)
		}
	})
	return uint32(lis.Addr().(*net.TCPAddr).Port)
}
