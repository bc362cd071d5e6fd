package quickstart

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// localRun is a `portcullis local` subprocess and what it printed.
type localRun struct {
	cmd     *exec.Cmd
	dataDir string
	ready   chan struct{}
	exited  chan struct{}
	waitErr error

	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
}

// startLocal runs bin with args in dir. When the test ends it is interrupted if still
// running, and on failure its output and logs are shown.
func startLocal(t *testing.T, bin, dir, dataDir string, args []string) *localRun {
	t.Helper()
	r := &localRun{dataDir: dataDir, ready: make(chan struct{}), exited: make(chan struct{})}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Dir = dir
	r.cmd.Stderr = &lockedWriter{mu: &r.mu, w: &r.stderr}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go r.read(stdout)
	t.Cleanup(func() { r.cleanup(t) })
	return r
}

// readyBlockEnd is the last line of the block that starts with "Ready.". The test
// reads what was printed once ready is closed, so ready waits for the whole block: closed
// at "Ready.", the block's other lines were sometimes still unread and checkPrinted
// failed on a loaded machine.
const readyBlockEnd = "Ctrl-C here stops everything."

// read copies stdout and closes ready at the last line of the Ready block.
func (r *localRun) read(stdout io.Reader) {
	s := bufio.NewScanner(stdout)
	once := sync.Once{}
	for s.Scan() {
		r.mu.Lock()
		r.stdout.WriteString(s.Text() + "\n")
		r.mu.Unlock()
		if s.Text() == readyBlockEnd {
			once.Do(func() { close(r.ready) })
		}
	}
	r.waitErr = r.cmd.Wait()
	close(r.exited)
}

// Stdout is what it printed so far.
func (r *localRun) Stdout() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stdout.String()
}

func (r *localRun) Stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// waitReady waits for the Ready block and returns how long it took.
func (r *localRun) waitReady(t *testing.T, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-r.ready:
		return time.Since(start)
	case <-r.exited:
		t.Fatalf("portcullis local exited before it was ready (%v)", r.waitErr)
	case <-time.After(timeout):
		t.Fatalf("portcullis local did not print the Ready block (up to %q) within %s", readyBlockEnd, timeout)
	}
	return 0
}

// interrupt sends SIGINT, as Ctrl-C does, and waits for a clean exit (status 0).
func (r *localRun) interrupt(t *testing.T, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.exited:
	case <-time.After(timeout):
		t.Fatalf("portcullis local did not stop within %s of SIGINT", timeout)
	}
	if r.waitErr != nil {
		t.Fatalf("portcullis local ended with %v after SIGINT, want exit status 0", r.waitErr)
	}
	return time.Since(start)
}

// cleanup stops a run the test left running and shows its output and logs on failure.
func (r *localRun) cleanup(t *testing.T) {
	select {
	case <-r.exited:
	default:
		_ = r.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-r.exited:
		case <-time.After(90 * time.Second):
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
	}
	if t.Failed() {
		t.Logf("portcullis local stdout:\n%s\nstderr:\n%s", r.Stdout(), r.Stderr())
		for _, name := range []string{"manager", "kube-apiserver", "etcd"} {
			t.Logf("last lines of %s.log:\n%s", name, lastLines(filepath.Join(r.dataDir, "logs", name+".log"), 20))
		}
		// Envoy's own log says whether it received, warmed and acknowledged what the
		// manager published, which the manager's log cannot.
		envoyLogs, _ := filepath.Glob(filepath.Join(r.dataDir, "envoy", "*", "envoy.log"))
		for _, path := range envoyLogs {
			t.Logf("last lines of %s:\n%s", path, lastLines(path, 40))
		}
	}
}

func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
