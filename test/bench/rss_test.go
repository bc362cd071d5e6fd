package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// envRSSChild makes the test binary a child process that generates a workload
// (workload.spec), translates and builds it once, cold, and prints
// its resident set with the input alone and its peak while translating: the honest
// answer to "how much memory does translating N Backends take", garbage and runtime
// overhead included.
const envRSSChild = "BENCH_RSS_CHILD"

// rssChild runs in the child process and returns its exit code.
func rssChild(spec string) int {
	var w workload
	if _, err := fmt.Sscanf(spec, "%dx%d/%d/%d", &w.gateways, &w.perGateway, &w.namespaces, &w.pods); err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", envRSSChild, spec, err)
		return 2
	}
	pairs, err := makePairs(2 * w.total())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res, addrs := w.resources(pairs)
	input := resetPeakRSS()
	result := translate.Translate(res, addrs, translate.Options{Now: time.Now(), Cache: translate.NewCache()})
	cache := envoyconfig.NewCache()
	for _, gw := range result.Gateways {
		if _, err := cache.Build(gw, envoyconfig.Options{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Printf("input=%d peak=%d gateways=%d\n", input, peakRSS(), len(result.Gateways))
	return 0
}

// resetPeakRSS returns the garbage of generating the input (thousands of certificates)
// to the system and restarts the kernel's peak-RSS mark from the current RSS, so that
// the peak measured next is the input plus translation's own needs. It returns the
// current RSS.
func resetPeakRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	// "5" resets the peak resident set size to the current one (proc(5), clear_refs).
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return statusKiB("VmRSS") << 10
}

// peakRSS is the peak resident set since resetPeakRSS (VmHWM), or since the start of the
// process where the kernel refused the reset.
func peakRSS() int64 {
	if hwm := statusKiB("VmHWM"); hwm > 0 {
		return hwm << 10
	}
	return maxRSS()
}

// statusKiB reads one "<field>: <n> kB" line of /proc/self/status.
func statusKiB(field string) int64 { return procStatusKiB("self", field) }

// procStatusKiB reads one "<field>: <n> kB" line of /proc/<pid>/status.
func procStatusKiB(pid, field string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var n int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &n)
			return n
		}
	}
	return 0
}

// childRSS runs the workload in a child process and returns its peak resident set
// after generating the input and after translating it, in bytes.
func childRSS(tb testing.TB, w workload) (input, peak int64) {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envRSSChild+"="+w.spec())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("RSS child for %s: %v", w, err)
	}
	var gateways int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "input=%d peak=%d gateways=%d", &input, &peak, &gateways); err != nil || gateways != w.gateways {
		tb.Fatalf("RSS child for %s printed %q (%v); want %d gateways", w, out, err, w.gateways)
	}
	return input, peak
}

// spec is the workload as the RSS child reads it: "<gateways>x<backends per
// gateway>/<namespaces>/<pods>".
func (w workload) spec() string {
	return fmt.Sprintf("%dx%d/%d/%d", w.gateways, w.perGateway, w.namespaces, w.pods)
}
