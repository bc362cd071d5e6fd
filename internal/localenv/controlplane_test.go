package localenv

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/portcullis-io/portcullis/config"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// controller-runtime's client warns with a stack trace when no logger was set.
func init() { ctrllog.SetLogger(logr.Discard()) }

// TestControlPlaneKeepsDataUntilReset starts the real etcd and kube-apiserver three
// times on one data directory: an object made in the first run is there in the
// second, and gone after --reset; no process outlives a stop.
func TestControlPlaneKeepsDataUntilReset(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		testenv.MissingBinary(t, "kube-apiserver and etcd", "envtest-assets", err)
	}
	o := Options{DataDir: t.TempDir(), AssetsDir: assets, APIServerPort: int(xdstest.FreePort(t)),
		EtcdPort: int(xdstest.FreePort(t)), EtcdPeerPort: int(xdstest.FreePort(t)), StartTimeout: 3 * time.Minute}
	ctx := context.Background()
	steps := []struct {
		name      string
		reset     bool
		wantKept  bool
		createCRD bool
	}{
		{name: "first run: install the CRDs and create a namespace", createCRD: true},
		{name: "second run: the namespace is still there", wantKept: true},
		{name: "third run with reset: it is gone", reset: true, wantKept: false},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			o.Reset = step.reset
			cp := startControlPlane(t, ctx, o)
			c, err := client.New(cp.Config, client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Get(ctx, types.NamespacedName{Name: "kept"}, &corev1.Namespace{})
			if kept := err == nil; kept != step.wantKept {
				t.Fatalf("namespace kept = %v (%v), want %v", kept, err, step.wantKept)
			}
			if !step.wantKept && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			if step.createCRD {
				installCRDs(t, ctx, c)
				if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}); err != nil {
					t.Fatal(err)
				}
			}
			stopControlPlane(t, cp, o.DataDir)
		})
	}
}

// TestSecondControlPlaneOnOneDataDirIsRefused: the lock stops a second run before it
// touches etcd's data.
func TestSecondControlPlaneOnOneDataDirIsRefused(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		testenv.MissingBinary(t, "kube-apiserver and etcd", "envtest-assets", err)
	}
	o := Options{DataDir: t.TempDir(), AssetsDir: assets, APIServerPort: int(xdstest.FreePort(t)),
		EtcdPort: int(xdstest.FreePort(t)), EtcdPeerPort: int(xdstest.FreePort(t))}
	cp := startControlPlane(t, context.Background(), o)
	other := o
	other.APIServerPort, other.EtcdPort, other.EtcdPeerPort = int(xdstest.FreePort(t)), int(xdstest.FreePort(t)), int(xdstest.FreePort(t))
	if _, err := Start(context.Background(), other); err == nil || !errors.Is(err, ErrInUse) {
		t.Fatalf("second start: %v, want ErrInUse", err)
	}
	stopControlPlane(t, cp, o.DataDir)
}

func startControlPlane(t *testing.T, ctx context.Context, o Options) *ControlPlane {
	t.Helper()
	cp, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	info, err := os.Stat(cp.Dir.Kubeconfig())
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig %v, mode %v: want mode 0600 (it holds a private key)", err, info.Mode().Perm())
	}
	if _, err := clientcmd.BuildConfigFromFlags("", cp.Dir.Kubeconfig()); err != nil {
		t.Fatalf("the kubeconfig does not load: %v", err)
	}
	checkEtcdAuthenticated(t, cp, o)
	if runtime.GOOS == "linux" {
		if pids, _ := Leftovers(o.DataDir); len(pids) != 2 {
			t.Fatalf("processes of the data directory while running: %v, want etcd and kube-apiserver", pids)
		}
	}
	return cp
}

func stopControlPlane(t *testing.T, cp *ControlPlane, root string) {
	t.Helper()
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	if pids, err := Leftovers(root); err != nil || len(pids) > 0 {
		t.Fatalf("after Stop: %v %v, want no process of the data directory", pids, err)
	}
}

func installCRDs(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	n, err := InstallCRDs(ctx, c, config.CRDs, config.CRDDirs, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n < 11 {
		t.Fatalf("installed %d CRDs, want our Backend and the 10 Gateway API standard ones", n)
	}
	// Applying twice (every start does) changes nothing and fails nothing.
	if _, err := InstallCRDs(ctx, c, config.CRDs, config.CRDDirs, time.Minute); err != nil {
		t.Fatalf("second install: %v", err)
	}
}
