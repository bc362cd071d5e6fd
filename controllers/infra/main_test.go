package infra

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// api is the test API server; nil when its binaries are missing outside CI, in which
// case the tests that need it skip (the host provider's tests still run).
var (
	api    *testenv.APIServer
	apiErr error
)

func TestMain(m *testing.M) {
	api, apiErr = testenv.StartAPIServer()
	if apiErr != nil && testenv.InCI() {
		fmt.Fprintf(os.Stderr, "FAIL: cannot start the test API server: %v; run 'make envtest-assets'\n", apiErr)
		os.Exit(1)
	}
	code := m.Run()
	if api != nil {
		if err := api.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test API server: %v\n", err)
		}
	}
	os.Exit(code)
}

// k8s returns a client of the test API server, or skips the test without one.
func k8s(t *testing.T) client.Client {
	t.Helper()
	if api == nil {
		testenv.MissingBinary(t, "the test API server", "envtest-assets", apiErr)
	}
	return api.Client
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "infra-"}}
	if err := k8s(t).Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
