//go:build linux

package operator

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// envoyPIDs lists the live processes whose command line names a bootstrap under dir:
// exactly the Envoys a manager with that --work-dir started (a zombie has an empty
// command line and is not counted).
func envoyPIDs(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		if startedFrom(cmdline, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// startedFrom reports whether a NUL-separated command line runs Envoy with "-c" and a
// bootstrap inside dir.
func startedFrom(cmdline []byte, dir string) bool {
	args := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-c" && strings.HasPrefix(args[i+1], dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// waitNoEnvoys waits until no Envoy started from dir runs.
func waitNoEnvoys(dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids := envoyPIDs(dir)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Envoy processes %v started from %s still run %s later", pids, dir, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// accepts reports whether something accepts TCP connections on 127.0.0.1:port.
func accepts(port uint32) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// timeUntilRefused polls the port every 10 ms from start until it refuses connections
// and returns how long that took; ok is false if it still accepted after timeout.
func timeUntilRefused(port uint32, start time.Time, timeout time.Duration) (time.Duration, bool) {
	for time.Since(start) < timeout {
		if !accepts(port) {
			return time.Since(start), true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start), false
}
