package deploy

import (
	"context"
	"flag"
	"os/exec"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// exampleImage is the image of the README's make deploy commands.
const exampleImage = "registry.example.com/portcullis:v0.1.0"

// exampleFlags are the flags examples/manager-flags adds to the manager.
var exampleFlags = []string{"--cluster-cidr=10.244.0.0/16,10.96.0.0/12", "--allow-cidr=10.20.30.0/24"}

// TestMakeDeployPassesManagerFlags runs the README's command, make deploy with
// DEPLOY_BASE=examples/manager-flags, against a real API server, reads the manager
// Deployment back and checks it runs the image given, config/default's arguments and
// the example's flags, which the manager's DNS guard accepts.
func TestMakeDeployPassesManagerFlags(t *testing.T) {
	api := startAPIServer(t)
	kubeconfig, err := api.Kubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "-C", repoPath(t), "deploy", "IMG="+exampleImage,
		"DEPLOY_BASE=examples/manager-flags", "KUBECTL="+testenv.KubectlBinary(t)+" --kubeconfig "+kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make deploy: %v\n%s", err, out)
	}

	var d appsv1.Deployment
	if err := api.Client.Get(context.Background(), client.ObjectKey{Namespace: systemNamespace, Name: managerName}, &d); err != nil {
		t.Fatalf("the manager Deployment: %v", err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != exampleImage {
		t.Errorf("image %q, want %q", c.Image, exampleImage)
	}
	base := findManager(t, defaultObjects(t)).container.Args
	if want := append(slices.Clone(base), exampleFlags...); !slices.Equal(c.Args, want) {
		t.Errorf("manager args\n got %q\nwant %q (config/default's, then the example's)", c.Args, want)
	}
	assertGuardAccepts(t, exampleFlags)
}

// assertGuardAccepts parses DNS guard flags as 'portcullis manager' does.
func assertGuardAccepts(t *testing.T, args []string) {
	t.Helper()
	cfg := dnsguard.DefaultConfig()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the manager would refuse %s: %v", strings.Join(args, " "), err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the DNS guard refuses %s: %v", strings.Join(args, " "), err)
	}
	if cidrs, err := cfg.ClusterPrefixes(); err != nil || len(cidrs) != 2 {
		t.Errorf("cluster CIDRs %v (%v), want the example's two", cidrs, err)
	}
}
