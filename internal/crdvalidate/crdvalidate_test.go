package crdvalidate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/config"
	"github.com/portcullis-io/portcullis/internal/crdvalidate"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

var api *testenv.APIServer

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithAPIServer(m, func(a *testenv.APIServer) { api = a }))
}

// TestOfflineRefusalIsTheAPIServers creates each invalid object on a real kube-apiserver
// (strict field validation, as kubectl apply sends) and validates it offline: the two
// answers must be the same status, message and causes, character for character. The
// validator has first accepted every valid fixture and sample, and checks each invalid
// object twice, so the CEL rules' remembered acceptances (cel_memo.go) are in play: a
// value a rule accepted elsewhere must not hide what it refuses here.
func TestOfflineRefusalIsTheAPIServers(t *testing.T) {
	v := newValidator(t)
	for _, obj := range validObjects(t) {
		if err := v.Validate(obj); err != nil {
			t.Fatalf("%s/%s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	objs := append(readObjects(t, "../../api/v1alpha1/testdata/invalid-backends.yaml"), readObjects(t, "testdata/invalid.yaml")...)
	for _, obj := range objs {
		t.Run(obj.GetKind()+"/"+obj.GetName(), func(t *testing.T) {
			offline := v.Validate(obj)
			again := v.Validate(obj)
			if (again == nil) != (offline == nil) {
				t.Fatalf("the second validation of the same object differs: %v, then %v", offline, again)
			}
			if offline != nil {
				if diff := cmp.Diff(comparable(t, offline), comparable(t, again)); diff != "" {
					t.Fatalf("the second validation of the same object differs (-first +second):\n%s", diff)
				}
			}
			server := create(t, obj)
			if server == nil {
				t.Fatal("the API server accepted the object; the fixture must be invalid")
			}
			if offline == nil {
				t.Fatalf("offline validation accepted what the API server refused with:\n%v", server)
			}
			if !crdvalidate.IsRefusal(offline) {
				t.Fatalf("offline validation failed instead of refusing: %v", offline)
			}
			if diff := cmp.Diff(comparable(t, server), comparable(t, offline)); diff != "" {
				t.Errorf("offline refusal differs from the API server's (-server +offline):\n%s", diff)
			}
		})
	}
}

// TestOfflineAcceptsWhatTheAPIServerAccepts: valid objects, the samples among them, pass
// both.
func TestOfflineAcceptsWhatTheAPIServerAccepts(t *testing.T) {
	v := newValidator(t)
	checked := 0
	for _, obj := range validObjects(t) {
		if !v.Knows(obj.GroupVersionKind().GroupKind()) {
			continue
		}
		checked++
		t.Run(obj.GetKind()+"/"+obj.GetNamespace()+"/"+obj.GetName(), func(t *testing.T) {
			if err := v.Validate(obj); err != nil {
				t.Errorf("offline validation refused a valid object: %v", err)
			}
			if err := create(t, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Errorf("the API server refused the object (the fixture must be valid): %v", err)
			}
		})
	}
	if checked < 20 {
		t.Fatalf("only %d objects of CRD kinds checked; the fixtures were not found", checked)
	}
}

// TestUnservedVersionIsNamed: an apiVersion the CRD does not serve is an error naming
// the versions it does serve, not a silent pass.
func TestUnservedVersionIsNamed(t *testing.T) {
	v := newValidator(t)
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("egress.portcullis.io/v1beta9")
	obj.SetKind("Backend")
	obj.SetName("api")
	err := v.Validate(obj)
	want := `no matches for kind "Backend" in version "egress.portcullis.io/v1beta9": the backends.egress.portcullis.io CRD serves egress.portcullis.io/v1alpha1`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if crdvalidate.IsRefusal(err) {
		t.Error("an unserved version is reported as a refusal of the object")
	}
}

// TestValidateDoesNotModifyItsInput: defaulting and pruning happen on a copy.
func TestValidateDoesNotModifyItsInput(t *testing.T) {
	v := newValidator(t)
	obj := readObjects(t, "testdata/invalid.yaml")[1] // unknown-field: pruning would remove it
	before := obj.DeepCopy()
	_ = v.Validate(obj)
	if diff := cmp.Diff(before.Object, obj.Object); diff != "" {
		t.Errorf("Validate changed its input (-before +after):\n%s", diff)
	}
}

// validObjects are the valid fixtures and every sample's objects.
func validObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs := append(readObjects(t, "../../api/v1alpha1/testdata/valid-backends.yaml"), readObjects(t, "testdata/valid.yaml")...)
	samples, err := filepath.Glob("../../samples/*.yaml")
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	for _, s := range samples {
		objs = append(objs, readObjects(t, s)...)
	}
	return objs
}

func newValidator(t *testing.T) *crdvalidate.Validator {
	t.Helper()
	v, err := crdvalidate.New(config.CRDs, config.CRDDirs...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// create creates obj as kubectl apply does (strict field validation) and returns the
// API server's error.
func create(t *testing.T, obj *unstructured.Unstructured) error {
	t.Helper()
	if ns := obj.GetNamespace(); ns != "" {
		err := api.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
	return api.Client.Create(context.Background(), obj.DeepCopy(), client.FieldValidation("Strict"))
}

// comparable is what kubectl receives and prints of a refusal: code, reason, message and
// causes. The API server lists the schema errors of one object in Go map order, which
// changes from request to request, so the causes are sorted after checking that the
// message is exactly the list of causes, in the order they came.
func comparable(t *testing.T, err error) metav1.Status {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("%v is not an API status error", err)
	}
	s := status.Status()
	out := metav1.Status{Code: s.Code, Reason: s.Reason, Message: s.Message}
	if s.Details == nil || len(s.Details.Causes) < 2 {
		out.Details = s.Details
		return out
	}
	details := *s.Details
	var parts []string
	for _, c := range details.Causes {
		parts = append(parts, c.Field+": "+c.Message)
	}
	prefix := fmt.Sprintf("%s.%s %q is invalid: ", details.Kind, details.Group, details.Name)
	if want := prefix + "[" + strings.Join(parts, ", ") + "]"; s.Message != want {
		t.Fatalf("message is not the list of causes:\n got: %s\nwant: %s", s.Message, want)
	}
	details.Causes = slices.Clone(details.Causes)
	slices.SortFunc(details.Causes, func(a, b metav1.StatusCause) int { return strings.Compare(a.Field+a.Message, b.Field+b.Message) })
	out.Details, out.Message = &details, prefix+"[the causes]"
	return out
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	return crdvalidate.ReadObjects(t, path)
}
