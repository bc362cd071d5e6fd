package dnsguard

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain fails the package when goroutines started by the tests (servers, stores,
// resolvers) are still running a few seconds after the last test.
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if f := flag.Lookup("test.fuzz"); code == 0 && (f == nil || f.Value.String() == "") {
		if err := waitForGoroutines(before, 5*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func waitForGoroutines(want int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return nil
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			return fmt.Errorf("goroutine leak: %d running after the tests, %d before\n%s", n, want, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
