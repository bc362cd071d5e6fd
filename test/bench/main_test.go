package bench

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(envRSSChild); spec != "" {
		os.Exit(rssChild(spec))
	}
	code := m.Run()
	stopAPIServer()
	os.Exit(code)
}

// The API server is started by the first benchmark that needs it and stopped when the
// package's tests end: most benchmarks never need one.
var apiServer struct {
	sync.Mutex
	server *testenv.APIServer
	err    error
}

// sharedAPIServer returns the package's API server, starting it on first use. A
// missing kube-apiserver or etcd fails the benchmark under CI=true, and skips it,
// saying how to install them, elsewhere.
func sharedAPIServer(tb testing.TB) *testenv.APIServer {
	tb.Helper()
	apiServer.Lock()
	defer apiServer.Unlock()
	if apiServer.server == nil && apiServer.err == nil {
		apiServer.server, apiServer.err = testenv.StartAPIServer()
	}
	if apiServer.err != nil {
		testenv.MissingBinary(tb, "kube-apiserver and etcd", "envtest-assets", apiServer.err)
	}
	return apiServer.server
}

func stopAPIServer() {
	apiServer.Lock()
	defer apiServer.Unlock()
	if apiServer.server != nil {
		if err := apiServer.server.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the API server: %v\n", err)
		}
	}
}
