package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// envProcessSizes lists the sizes BenchmarkTranslateProcess runs (default 200: make test
// runs every benchmark once).
const envProcessSizes = "BENCH_PROCESS_SIZES"

// BenchmarkTranslateProcess runs `portcullis translate -f FILE` as a user runs it, a
// whole process from reading the file to the last byte of YAML, on n Backends and
// HTTPRoutes in the style of samples/01 (FQDN, the System CAs, an explicit SNI; 50
// namespaces; no --address, so no name resolves): loading, the built-in CRDs'
// validation, translation, building and rendering. It reports wall time, CPU time and
// the process's peak resident set.
func BenchmarkTranslateProcess(b *testing.B) {
	bin := buildPortcullis(b)
	for _, n := range sizeList(b, envProcessSizes, []int{200}) {
		b.Run(fmt.Sprintf("backends=%d", n), func(b *testing.B) {
			in := filepath.Join(b.TempDir(), "in.yaml")
			if err := os.WriteFile(in, processInput(n), 0o644); err != nil {
				b.Fatal(err)
			}
			var wall, cpu time.Duration
			var peak int64
			for b.Loop() {
				w, c, rss := runTranslateProcess(b, bin, in)
				wall, cpu, peak = wall+w, cpu+c, max(peak, rss)
			}
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms")
			b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
		})
	}
}

// runTranslateProcess runs one translation and returns its wall time, CPU time (user and
// system) and peak RSS in bytes.
func runTranslateProcess(b *testing.B, bin, in string) (time.Duration, time.Duration, int64) {
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "translate", "-f", in)
	cmd.Stderr = &stderr
	cmd.Stdout = nil // discarded: /dev/null, as a redirected terminal
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("portcullis translate: %v\n%s", err, stderr.Bytes())
	}
	wall := time.Since(start)
	usage := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), usage.Maxrss << 10
}

// processInput is n Backends and HTTPRoutes on the Gateway of samples/00.
func processInput(n int) []byte {
	gateway, err := os.ReadFile("../../samples/00-gateway.yaml")
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	buf.Write(gateway)
	for j := range 50 {
		fmt.Fprintf(&buf, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-%d\n", j)
	}
	for i := range n {
		fmt.Fprintf(&buf, processObjects, i, i%50, i)
	}
	return buf.Bytes()
}

// processObjects is one Backend and its HTTPRoute: index, namespace index, index.
const processObjects = `---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata:
  name: b%[1]d
  namespace: team-%[2]d
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: api-%[1]d.example.com
      tls:
        wellKnownCACertificates: System
        serverName: api-%[1]d.example.com
    ports:
    - name: https
      port: 443
      protocol: HTTPS
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: r%[1]d
  namespace: team-%[2]d
spec:
  parentRefs:
  - name: egress
    namespace: egress-gateway
  hostnames:
  - api-%[1]d.example.com
  rules:
  - backendRefs:
    - group: egress.portcullis.io
      kind: Backend
      name: b%[1]d
`
