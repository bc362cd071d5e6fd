//go:build cluster

// Package cluster is the end-to-end test on a real Kubernetes cluster: the single-node
// cluster of `make cluster-up` (hack/cluster), or any cluster laid out the same way.
// It deploys the manager with `make deploy`, creates a Gateway and sends traffic from
// client pods through the Gateway's Service to a Service Backend, to an FQDN Backend
// whose name the host DNS server resolves to an address on lo (TLS originated with a
// private CA and a client certificate), and to a name that resolves to the metadata
// address; then it reads the audit log and the NetworkPolicies the manager wrote.
//
// It runs only when PORTCULLIS_CLUSTER_KUBECONFIG names the cluster's kubeconfig
// (`make cluster-test` sets it); under CI=true a set but unreachable cluster fails.
//
//	PORTCULLIS_CLUSTER_KUBECONFIG  the cluster's kubeconfig (required)
//	PORTCULLIS_CLUSTER_IMAGE       manager image for `make deploy IMG=...`, already in the
//	                               node's containerd; empty: the manager must be deployed
//	PORTCULLIS_CLUSTER_KUBECTL     kubectl (default bin/cluster/kubectl, then PATH)
//	PORTCULLIS_CLUSTER_KEEP=1      leave the test's namespaces for a look afterwards
package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// cluster is a connection to the cluster under test.
type cluster struct {
	t          *testing.T
	root       string // repository root
	kubeconfig string
	kubectlBin string
	c          client.Client
	cs         *kubernetes.Clientset
}

// connect returns the cluster PORTCULLIS_CLUSTER_KUBECONFIG names. The suite is built
// only with the "cluster" tag (make cluster-test), so a missing variable or a cluster
// that does not answer fails it: nothing here skips.
func connect(t *testing.T) *cluster {
	t.Helper()
	kubeconfig := os.Getenv("PORTCULLIS_CLUSTER_KUBECONFIG")
	if kubeconfig == "" {
		t.Fatal("PORTCULLIS_CLUSTER_KUBECONFIG is not set: no cluster to test (make cluster-test starts one and sets it)")
	}
	unreachable := func(err error) {
		t.Fatalf("PORTCULLIS_CLUSTER_KUBECONFIG=%s but the cluster is unreachable: %v", kubeconfig, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		unreachable(err)
	}
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		unreachable(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		unreachable(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, root: root, kubeconfig: kubeconfig, kubectlBin: kubectlPath(root), c: c, cs: cs}
}

func kubectlPath(root string) string {
	if p := os.Getenv("PORTCULLIS_CLUSTER_KUBECTL"); p != "" {
		return p
	}
	if p := filepath.Join(root, "bin", "cluster", "kubectl"); isExecutable(p) {
		return p
	}
	return "kubectl"
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// run runs a command against the cluster (KUBECONFIG set) and returns its output. Not
// bound to the test's context: cleanups run commands too.
func (k *cluster) run(stdin string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig)
	cmd.Dir = k.root
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func (k *cluster) kubectl(args ...string) (string, error) { return k.run("", k.kubectlBin, args...) }

// apply server-side applies YAML.
func (k *cluster) apply(yaml string) {
	k.t.Helper()
	if _, err := k.run(yaml, k.kubectlBin, "apply", "--server-side", "--force-conflicts", "--field-manager=portcullis-cluster-test", "-f", "-"); err != nil {
		k.t.Fatal(err)
	}
}

// deploy runs `make deploy` with PORTCULLIS_CLUSTER_IMAGE, then waits for the manager.
func (k *cluster) deploy() {
	k.t.Helper()
	if img := os.Getenv("PORTCULLIS_CLUSTER_IMAGE"); img != "" {
		start := time.Now()
		if _, err := k.run("", "make", "--no-print-directory", "deploy", "IMG="+img, "KUBECTL="+k.kubectlBin); err != nil {
			k.t.Fatal(err)
		}
		k.t.Logf("make deploy IMG=%s: %s", img, time.Since(start).Round(time.Millisecond))
		k.expectManagerImage(img)
	}
	start := time.Now()
	if out, err := k.kubectl("-n", "portcullis-system", "rollout", "status", "deployment/portcullis-controller-manager", "--timeout=3m"); err != nil {
		k.t.Fatalf("the manager is not running (set PORTCULLIS_CLUSTER_IMAGE to deploy it): %v\n%s", err, k.describe("portcullis-system"))
	} else {
		k.t.Logf("manager ready in %s: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
	}
}

// describe returns what helps to understand a failure in a namespace: pods and events.
func (k *cluster) describe(namespace string) string {
	pods, _ := k.kubectl("-n", namespace, "get", "pods", "-o", "wide")
	events, _ := k.kubectl("-n", namespace, "get", "events", "--sort-by=.lastTimestamp")
	return "pods:\n" + pods + "events:\n" + events
}

// eventually retries check every second until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, timeout, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v (last error: %v)", what, t.Context().Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// expectManagerImage checks that the manager runs img and never pulls it: the cluster
// has no registry, the image is only in the node's containerd.
func (k *cluster) expectManagerImage(img string) {
	k.t.Helper()
	d := &appsv1.Deployment{}
	if err := k.c.Get(k.t.Context(), client.ObjectKey{Namespace: "portcullis-system", Name: "portcullis-controller-manager"}, d); err != nil {
		k.t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != img || c.ImagePullPolicy == corev1.PullAlways {
		k.t.Fatalf("manager container runs %s with imagePullPolicy %s, want %s and IfNotPresent or Never", c.Image, c.ImagePullPolicy, img)
	}
}
