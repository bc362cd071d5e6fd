package samples

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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// samplePort is the Gateway listener port the samples use.
const samplePort = 8080

// kubectl runs kubectl against the test API server as a user would and returns its
// combined output; every run is kept in *transcript for the secret check.
type kubectl struct {
	bin, kubeconfig string
	transcript      *strings.Builder
}

func newKubectl(t *testing.T, api *testenv.APIServer) *kubectl {
	t.Helper()
	kubeconfig, err := api.Kubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &kubectl{bin: testenv.KubectlBinary(t), kubeconfig: kubeconfig, transcript: &strings.Builder{}}
}

func (k *kubectl) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	fmt.Fprintf(k.transcript, "$ kubectl %s\n%s", strings.Join(args, " "), out.String())
	return out.String(), err
}

// create makes what a sample requires, after its namespace, with the commands its header
// tells the user to run. One left by an earlier run in this process (go test -count=N)
// is deleted first, so the object holds this run's material.
func (k *kubectl) create(t *testing.T, r requirement, m *material) {
	t.Helper()
	if out, err := k.run(t, "create", "namespace", r.namespace); err != nil && !strings.Contains(out, "AlreadyExists") {
		t.Fatalf("kubectl create namespace %s: %v\n%s", r.namespace, err, out)
	}
	kind := strings.Split(r.kind, "/")[0]
	if out, err := k.run(t, "delete", kind, r.name, "-n", r.namespace, "--ignore-not-found"); err != nil {
		t.Fatalf("kubectl delete %s %s: %v\n%s", kind, r.name, err, out)
	}
	if out, err := k.run(t, r.args(m)...); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(r.args(m)[:4], " "), err, out)
	}
}

// apply runs kubectl apply -f on the file and fails on an error or on a warning from the
// API server (the one about objects made by kubectl create, not apply, aside).
func (k *kubectl) apply(t *testing.T, path string) {
	t.Helper()
	out, err := k.run(t, "apply", "-f", path)
	if err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", path, err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Warning:") && !strings.Contains(line, "last-applied-configuration") {
			t.Errorf("kubectl apply -f %s: %s", filepath.Base(path), line)
		}
	}
	t.Logf("kubectl apply -f %s:\n%s", filepath.Base(path), strings.TrimSpace(out))
}

// withFreeGatewayPorts returns the path to apply for a sample: the file itself, or, for a
// file with a Gateway, a copy whose every listener listens on a free port instead (the
// port of the one on 8080 is returned, for the log). The host provider binds each
// listener port on this machine, where 8080 (or 443, bound as 10443) may be taken by
// another test or Gateway; in a cluster each Envoy has its own pod network.
func withFreeGatewayPorts(t *testing.T, s *sample) (path string, port uint32) {
	t.Helper()
	if len(s.objectsOf("Gateway")) == 0 {
		return s.path, 0
	}
	var docs [][]byte
	for _, o := range s.objects {
		o = o.DeepCopy()
		if o.GetKind() == "Gateway" {
			if p := rewriteListenerPorts(t, o); p != 0 {
				port = p
			}
		}
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, data)
	}
	path = filepath.Join(t.TempDir(), s.name)
	if err := os.WriteFile(path, bytes.Join(docs, []byte("---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, port
}

// rewriteListenerPorts gives every listener of the Gateway a free port and returns the
// one that replaced samplePort, if any.
func rewriteListenerPorts(t *testing.T, gw *unstructured.Unstructured) uint32 {
	t.Helper()
	listeners, _, err := unstructured.NestedSlice(gw.Object, "spec", "listeners")
	if err != nil {
		t.Fatal(err)
	}
	var moved uint32
	for _, raw := range listeners {
		l := raw.(map[string]any)
		free := xdstest.FreePort(t)
		if p, _ := l["port"].(float64); p == samplePort {
			moved = free
		}
		l["port"] = int64(free)
	}
	if err := unstructured.SetNestedSlice(gw.Object, listeners, "spec", "listeners"); err != nil {
		t.Fatal(err)
	}
	return moved
}
