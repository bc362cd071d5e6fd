package infra

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
)

// stableAfter is how long an Envoy must have run for the restart backoff to start over.
const stableAfter = 30 * time.Second

// hostEnvoy supervises the Envoy process of one Gateway: it starts it, restarts it with
// backoff whenever it exits, and stops it on request.
type hostEnvoy struct {
	h         *Host
	gateway   string
	dir       string
	bootstrap []byte
	ports     hostPorts
	// cert digests the xDS client certificate Envoy was started with
	// (certificateDigest).
	cert string

	mu      sync.Mutex
	cmd     *exec.Cmd // the running process, nil between an exit and the restart
	stopReq chan struct{}
	done    chan struct{}
	once    sync.Once
}

// AuditLogFile is the file, in each Gateway's work directory, that receives the
// Gateway's audit log on a host (in a pod it is the container's standard output).
const AuditLogFile = "audit.log"

// start writes the bootstrap and the metrics and admin addresses and starts supervising. It fails
// only if Envoy cannot be started at all (e.g. a wrong binary path); later failures are
// retried.
func (h *Host) start(gateway, dir string, boot []byte, ports hostPorts) (*hostEnvoy, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("infra: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bootstrap.yaml"), boot, 0o600); err != nil {
		return nil, fmt.Errorf("infra: %w", err)
	}
	for name, port := range map[string]uint32{MetricsAddressFile: ports.metrics, AdminAddressFile: ports.admin} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(loopbackAddress(port)+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("infra: %w", err)
		}
	}
	e := &hostEnvoy{h: h, gateway: gateway, dir: dir, bootstrap: boot, ports: ports,
		stopReq: make(chan struct{}), done: make(chan struct{})}
	exited, err := e.launch()
	if err != nil {
		return nil, err
	}
	go e.supervise(exited)
	return e, nil
}

// launch starts one Envoy process and returns a channel that receives its exit.
func (e *hostEnvoy) launch() (<-chan error, error) {
	o := e.h.opts
	logFile, err := os.OpenFile(filepath.Join(e.dir, "envoy.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("infra: Envoy log: %w", err)
	}
	// The audit log is Envoy's standard output (one JSON line per request), kept apart
	// from Envoy's own log.
	auditFile, err := os.OpenFile(filepath.Join(e.dir, AuditLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("infra: Envoy audit log: %w", err)
	}
	fmt.Fprintf(logFile, "--- portcullis: starting Envoy for %s at %s\n", e.gateway, time.Now().Format(time.RFC3339))
	args := []string{
		"-c", filepath.Join(e.dir, "bootstrap.yaml"),
		"--log-level", o.LogLevel,
		// Envoys sharing a machine collide on the shared memory and sockets of hot
		// restart unless each has its own --base-id, and every base ID used leaves a file
		// in /dev/shm behind. The provider restarts processes and never hot restarts, so
		// it turns hot restart off: no base ID is needed, nothing is left behind.
		"--disable-hot-restart",
	}
	args = append(args, bootstrap.LogArgs()...)
	if o.Concurrency > 0 {
		args = append(args, "--concurrency", strconv.Itoa(o.Concurrency))
	}
	cmd := exec.Command(o.EnvoyBinary, args...)
	cmd.Stdout, cmd.Stderr = auditFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		auditFile.Close()
		return nil, fmt.Errorf("infra: start Envoy for %s: %w", e.gateway, err)
	}
	e.mu.Lock()
	e.cmd = cmd
	e.mu.Unlock()
	o.Log.Info("Envoy started", "gateway", e.gateway, "pid", cmd.Process.Pid, "adminPort", e.ports.admin,
		"metrics", e.metricsURL(), "log", logFile.Name(), "auditLog", auditFile.Name())
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		logFile.Close()
		auditFile.Close()
		exited <- err
	}()
	return exited, nil
}

// supervise waits for the process to exit and restarts it, waiting longer after each
// quick exit, until stop is requested.
func (e *hostEnvoy) supervise(exited <-chan error) {
	defer close(e.done)
	o := e.h.opts
	backoff := o.RestartBackoff
	started := time.Now()
	for {
		select {
		case <-e.stopReq:
			e.terminate(exited)
			return
		case err := <-exited:
			e.mu.Lock()
			pid := e.cmd.Process.Pid
			e.cmd = nil
			e.mu.Unlock()
			if time.Since(started) > stableAfter {
				backoff = o.RestartBackoff
			}
			o.Log.Error(exitError(err), "Envoy exited; restarting", "gateway", e.gateway, "pid", pid,
				"ranFor", time.Since(started).Round(time.Millisecond), "restartIn", backoff, "log", filepath.Join(e.dir, "envoy.log"))
		}
		for {
			select {
			case <-e.stopReq:
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, o.MaxRestartBackoff)
			var err error
			if exited, err = e.launch(); err == nil {
				break
			}
			o.Log.Error(err, "Envoy restart failed; retrying", "gateway", e.gateway, "restartIn", backoff)
		}
		started = time.Now()
	}
}

// terminate sends SIGTERM, then SIGKILL after the grace period, and waits for the exit.
func (e *hostEnvoy) terminate(exited <-chan error) {
	e.mu.Lock()
	cmd := e.cmd
	e.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(e.h.opts.StopGrace):
		e.h.opts.Log.Info("Envoy did not stop in time; killing it", "gateway", e.gateway, "pid", cmd.Process.Pid, "grace", e.h.opts.StopGrace)
		_ = cmd.Process.Kill()
		<-exited
	}
	e.mu.Lock()
	e.cmd = nil
	e.mu.Unlock()
	e.h.opts.Log.Info("Envoy stopped", "gateway", e.gateway, "pid", cmd.Process.Pid)
}

// stop ends supervision and the process, and waits for both; then the address files
// go, since no Envoy answers there any more. It may be called more than once.
func (e *hostEnvoy) stop() {
	e.once.Do(func() { close(e.stopReq) })
	<-e.done
	removeAddressFiles(e.dir)
}

// addressFiles are the files naming a running Envoy's loopback ports.
var addressFiles = []string{MetricsAddressFile, AdminAddressFile}

// removeAddressFiles removes the address files of a Gateway's directory. They name
// ports picked for one Envoy process: left behind, `portcullis local` restarted on the
// same data directory printed the previous run's admin address for the Gateway (its
// status, kept in etcd, was already complete) before the new Envoy wrote its own.
func removeAddressFiles(dir string) {
	for _, name := range addressFiles {
		_ = os.Remove(filepath.Join(dir, name))
	}
}

func (e *hostEnvoy) metricsURL() string {
	return "http://" + loopbackAddress(e.ports.metrics) + MetricsPath
}

func (e *hostEnvoy) pid() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd == nil {
		return 0
	}
	return e.cmd.Process.Pid
}

func exitError(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}
