// Package samples proves that every file in samples/ works as written: each is applied
// with kubectl to a real kube-apiserver watched by the real manager (xDS server, DNS
// trust guard, and an Envoy per Gateway on this machine, the host provider), and every
// condition its header promises is reached. It also checks that each file has a header
// a reader can follow and that every documented use case has its file.
package samples

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// The API server starts on first use, so the header checks, which need only the files,
// run (and report) even where kube-apiserver and etcd have not been built.
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

// samplesDir is the repository's samples/ directory.
func samplesDir(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "samples")
}
