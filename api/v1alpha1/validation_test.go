package v1alpha1_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// wantAnnotation carries, on each invalid fixture, the message the API server must return.
const wantAnnotation = "test.portcullis.io/want"

var api *testenv.APIServer

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithAPIServer(m, func(a *testenv.APIServer) { api = a }))
}

// TestValidBackendsAreAccepted applies every document of testdata/valid-backends.yaml,
// including the Backend proposal's own example, exactly as a user's kubectl would (strict
// field validation, so a field the schema lacks is an error rather than silently dropped).
func TestValidBackendsAreAccepted(t *testing.T) {
	for _, obj := range readFixtures(t, "valid-backends.yaml") {
		t.Run(obj.GetName(), func(t *testing.T) {
			ensureNamespace(t, obj.GetNamespace())
			if err := createStrict(obj); err != nil {
				t.Fatalf("create refused: %v", err)
			}
		})
	}
}

// TestInvalidBackendsAreRefusedWithAClearMessage applies every document of
// testdata/invalid-backends.yaml and asserts the API server refuses it with the message
// its annotation names.
func TestInvalidBackendsAreRefusedWithAClearMessage(t *testing.T) {
	fixtures := readFixtures(t, "invalid-backends.yaml")
	if len(fixtures) < 30 {
		t.Fatalf("only %d invalid fixtures; the CEL rules need at least 30 cases", len(fixtures))
	}
	for _, obj := range fixtures {
		t.Run(obj.GetName(), func(t *testing.T) {
			want := obj.GetAnnotations()[wantAnnotation]
			if want == "" {
				t.Fatalf("fixture has no %s annotation", wantAnnotation)
			}
			ensureNamespace(t, obj.GetNamespace())
			err := createStrict(obj)
			if err == nil {
				t.Fatalf("create accepted; want it refused with %q", want)
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("create failed for another reason than validation: %v", err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error does not contain the expected message\n got: %v\nwant: %s", err, want)
			}
		})
	}
}

func createStrict(obj *unstructured.Unstructured) error {
	return api.Client.Create(context.Background(), obj.DeepCopy(),
		&client.CreateOptions{Raw: &metav1.CreateOptions{FieldValidation: "Strict"}})
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := api.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// readFixtures decodes a multi-document YAML file from testdata.
func readFixtures(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decoding %s: %v", name, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}
