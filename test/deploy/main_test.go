// Package deploy tests the deployment configuration in config/: that `kubectl
// kustomize config/default` renders, that a real API server accepts the result, that
// the copied Gateway API CRDs are the module's, and that what it runs is locked down.
package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// systemNamespace is where config/default installs the manager.
const systemNamespace = "portcullis-system"

// The API server starts on first use, so the tests that need only files or kubectl run
// (and report) even where kube-apiserver and etcd have not been built.
var apiServer struct {
	once sync.Once
	api  *testenv.APIServer
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if apiServer.api != nil {
		if err := apiServer.api.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test API server: %v\n", err)
		}
	}
	os.Exit(code)
}

// startAPIServer returns the package's API server, starting it the first time; a
// missing kube-apiserver or etcd fails the test under CI=true and skips it elsewhere.
func startAPIServer(t *testing.T) *testenv.APIServer {
	t.Helper()
	apiServer.once.Do(func() { apiServer.api, apiServer.err = testenv.StartAPIServer() })
	if apiServer.err != nil {
		testenv.MissingBinary(t, "the test API server", "envtest-assets", apiServer.err)
	}
	return apiServer.api
}

// repoPath returns a path inside the repository.
func repoPath(t *testing.T, elem ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// kubectl runs kubectl with stdin and returns its stdout and stderr; err is non-nil
// when it exits non-zero.
func kubectl(t *testing.T, stdin []byte, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.KubectlBinary(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// rendered caches `kubectl kustomize config/default`: every test reads the same output.
var rendered struct {
	once    sync.Once
	objects []*unstructured.Unstructured
	err     error
}

// defaultObjects returns the objects `kubectl kustomize config/default` renders, in order.
func defaultObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	dir := repoPath(t, "config", "default")
	testenv.KubectlBinary(t) // skip or fail here, not inside once
	rendered.once.Do(func() {
		rendered.err = errors.New("kubectl kustomize config/default did not finish")
		stdout, stderr, err := kubectl(t, nil, "kustomize", dir)
		if err != nil {
			rendered.err = fmt.Errorf("kubectl kustomize config/default: %w\n%s", err, stderr)
			return
		}
		rendered.objects, rendered.err = decodeObjects([]byte(stdout))
	})
	if rendered.err != nil {
		t.Fatal(rendered.err)
	}
	return rendered.objects
}

// decodeObjects splits a multi-document YAML stream into objects, skipping empty documents.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("decoding %q: %w", firstLine(doc), err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// encodeObjects joins objects into one YAML stream for kubectl's stdin.
func encodeObjects(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	return buf.Bytes()
}

// objectsOfKind returns the objects of one kind, converted to the typed T.
func objectsOfKind[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) []*T {
	t.Helper()
	var typed []*T
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		v := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, v); err != nil {
			t.Fatalf("%s: %v", describe(o), err)
		}
		typed = append(typed, v)
	}
	return typed
}

// describe names an object in failure messages: Kind namespace/name.
func describe(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}
