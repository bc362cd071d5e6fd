package bench

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// managerProcess is `portcullis manager` running as a process of its own, so that its
// resident set is its own and not the benchmark's (whose clients hold every object it
// creates). Its Go runtime traces each garbage collection (GODEBUG=gctrace=1) on
// stderr: the live heap a collection leaves is read from there, since the manager
// offers no way to force one from outside.
type managerProcess struct {
	cmd *exec.Cmd
	// pprof is the address of its /debug/pprof/.
	pprof string
	mu    sync.Mutex
	// gcs counts the collections seen; heapMB is the live heap the last one left.
	gcs    int
	heapMB int
	tail   []string // the last lines of stderr, for failures
	// anonPeak is the largest RssAnon sampled since takeAnonPeak last read it, in KiB.
	anonPeak atomic.Int64
}

// anonSample is how often the manager's anonymous resident memory is sampled.
const anonSample = 50 * time.Millisecond

// sampleAnon keeps the peak of the manager's RssAnon until done: the memory a cgroup
// limit can only get back by killing the process. VmHWM also counts the pages of the
// binary the kernel maps from its file (about 57 MiB), which it may drop under pressure
// and read again; the kernel keeps no peak of the anonymous part, so it is sampled.
func (p *managerProcess) sampleAnon(done <-chan struct{}) {
	pid := strconv.Itoa(p.cmd.Process.Pid)
	for {
		select {
		case <-done:
			return
		case <-time.After(anonSample):
		}
		kib := procStatusKiB(pid, "RssAnon")
		for {
			peak := p.anonPeak.Load()
			if kib <= peak || p.anonPeak.CompareAndSwap(peak, kib) {
				break
			}
		}
	}
}

// takeAnonPeak returns the peak RssAnon (MiB) sampled since the last call and starts
// a new one.
func (p *managerProcess) takeAnonPeak() float64 {
	return float64(p.anonPeak.Swap(0)) / 1024
}

// buildPortcullis builds the portcullis binary into a temporary directory.
func buildPortcullis(b *testing.B) string {
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(b.TempDir(), "portcullis")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/portcullis")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/portcullis: %v\n%s", err, out)
	}
	return bin
}

// startManagerProcess runs the manager with the kubernetes provider (no kubelet runs
// its Envoy Deployments: nothing connects to the xDS server) against the API server of
// kubeconfig, its DNS guard asking dnsAddr. It is killed when the benchmark ends.
func startManagerProcess(b *testing.B, bin, kubeconfig, dnsAddr string) *managerProcess {
	pprof := fmt.Sprintf("127.0.0.1:%d", xdstest.FreePort(b))
	cmd := exec.Command(bin, "manager", "--kubeconfig="+kubeconfig, "--provider=kubernetes", "--namespace="+managerNS,
		fmt.Sprintf("--xds-port=%d", xdstest.FreePort(b)), "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--dns-server="+dnsAddr, "--dns-ip-family=ipv4", "--zap-log-level=error", "--pprof-bind-address="+pprof)
	// The Deployment's memory limit (config/manager/manager.yaml: 512Mi), as its
	// downward API hands it to the manager.
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1", "PORTCULLIS_MEMORY_LIMIT=536870912")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	p := &managerProcess{cmd: cmd, pprof: pprof}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s manager: %v", bin, err)
	}
	go p.read(stderr)
	sampling := make(chan struct{})
	go p.sampleAnon(sampling)
	b.Cleanup(func() {
		close(sampling)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

// managerNS is the manager's namespace (its xDS certificates).
const managerNS = "portcullis-system"

// gcLine matches gctrace's "<heap at start>-><heap at end>-><live heap> MB".
var gcLine = regexp.MustCompile(`^gc \d+ .* (\d+)->(\d+)->(\d+) MB`)

func (p *managerProcess) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		if m := gcLine.FindStringSubmatch(line); m != nil {
			p.gcs++
			p.heapMB, _ = strconv.Atoi(m[3])
		} else {
			p.tail = append(p.tail, line)
			if len(p.tail) > 20 {
				p.tail = p.tail[1:]
			}
		}
		p.mu.Unlock()
	}
}

// lastGC returns the number of collections seen and the live heap the last one left.
func (p *managerProcess) lastGC() (gcs, heapMB int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gcs, p.heapMB
}

// alive fails the benchmark, with the manager's last words, when it has exited.
func (p *managerProcess) alive(b *testing.B) {
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		b.Fatalf("the manager exited: %v\n%s", err, strings.Join(p.tail, "\n"))
	}
}

// memory is the manager's resident set and its peak, and the live heap a garbage
// collection run after the call left, in MiB. The manager offers no way to force a
// collection and the runtime forces one only every two minutes, so poke has it
// reconcile (each reconcile allocates) until one runs; then, once it is quiet again, the
// resident set is read.
func (p *managerProcess) memory(b *testing.B, poke func(i int)) (rss, hwm, heap float64) {
	before, _ := p.lastGC()
	deadline := time.Now().Add(150 * time.Second)
	for i := 0; ; i++ {
		gcs, heapMB := p.lastGC()
		if gcs > before {
			heap = float64(heapMB)
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the manager ran no garbage collection within 150 s")
		}
		p.alive(b)
		if i%5 == 0 {
			poke(i)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.waitQuiet(b, 5*time.Minute)
	pid := strconv.Itoa(p.cmd.Process.Pid)
	return float64(procStatusKiB(pid, "VmRSS")) / 1024, float64(procStatusKiB(pid, "VmHWM")) / 1024, heap
}

// waitQuiet waits until the manager has used less than 3% of a CPU over 3 s: the
// reconciles, status writes and cache fills of the last changes are over.
func (p *managerProcess) waitQuiet(b *testing.B, timeout time.Duration) {
	const window, share = 3 * time.Second, 0.03
	deadline := time.Now().Add(timeout)
	for {
		before := p.cpuTicks(b)
		time.Sleep(window)
		used := float64(p.cpuTicks(b)-before) / clockTicks
		if used < share*window.Seconds() {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the manager was still busy after %s", timeout)
		}
	}
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on Linux).
const clockTicks = 100

// cpuTicks is the user and system CPU time of the manager so far (/proc/<pid>/stat).
func (p *managerProcess) cpuTicks(b *testing.B) int64 {
	p.alive(b)
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name (field 2) may hold spaces; the fields after it do not.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64) // field 14 of the line
	stime, _ := strconv.ParseInt(fields[12], 10, 64) // field 15
	return utime + stime
}

// envManagerHeapProfile names a file BenchmarkManagerMemory writes the manager's heap
// profile to once the Backends are loaded (go tool pprof -sample_index=inuse_space).
const envManagerHeapProfile = "BENCH_MANAGER_HEAP_PROFILE"

// saveHeapProfile writes the manager's heap profile to the file envManagerHeapProfile
// names, if any.
func (p *managerProcess) saveHeapProfile(b *testing.B) {
	path := os.Getenv(envManagerHeapProfile)
	if path == "" {
		return
	}
	resp, err := http.Get("http://" + p.pprof + "/debug/pprof/heap")
	if err != nil {
		b.Fatalf("heap profile: %v", err)
	}
	defer resp.Body.Close()
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, resp.Body); err != nil {
		b.Fatal(err)
	}
}
