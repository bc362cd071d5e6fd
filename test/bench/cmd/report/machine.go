package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// machine is what the results depend on besides the code.
type machine struct {
	cpu, memory, kernel, goVersion, envoy, load string
	cores                                       int
}

func machineFacts(root string) machine {
	return machine{
		cpu:       procField("/proc/cpuinfo", "model name"),
		cores:     runtime.NumCPU(),
		memory:    procField("/proc/meminfo", "MemTotal"),
		kernel:    readTrimmed("/proc/sys/kernel/osrelease"),
		goVersion: output("go", "env", "GOVERSION"),
		envoy:     envoyVersion(root),
		load:      loadAverage(),
	}
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// loadAverage is the 1, 5 and 15 minute load averages: the machine is shared, and a
// load above its core count slows every wall-clock figure.
func loadAverage() string {
	f := strings.Fields(readTrimmed("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func output(name string, args ...string) string {
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// envoyVersion asks the Envoy the benchmarks run: $ENVOY_BIN, else bin/envoy-*.
func envoyVersion(root string) string {
	bin := os.Getenv("ENVOY_BIN")
	if bin == "" {
		matches, _ := filepath.Glob(filepath.Join(root, "bin", "envoy-*"))
		if len(matches) == 0 {
			return "unknown"
		}
		bin = matches[len(matches)-1]
	}
	v := output(bin, "--version")
	if _, after, ok := strings.Cut(v, "version: "); ok {
		return strings.TrimSpace(after)
	}
	return v
}
