package testenv

import (
	"fmt"
	"os"
	"testing"
)

// RunWithAPIServer is a TestMain body: it starts the API server, runs the package's
// tests with it, and stops it. A missing binary fails under CI=true and skips the
// package's tests (exit 0, with the reason printed) elsewhere.
func RunWithAPIServer(m *testing.M, use func(*APIServer)) int {
	api, err := StartAPIServer()
	if err != nil {
		if InCI() {
			fmt.Fprintf(os.Stderr, "FAIL: cannot start the test API server: %v; run 'make envtest-assets'\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "SKIP: cannot start the test API server: %v; run 'make envtest-assets'\n", err)
		return 0
	}
	use(api)
	code := m.Run()
	if err := api.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the test API server: %v\n", err)
	}
	return code
}
