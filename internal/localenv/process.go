package localenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// child is one process the control plane started, with its output in a log file.
type child struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// startChild starts path with args, its output appended to logPath.
func startChild(name, path string, args []string, logPath string) (*child, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	fmt.Fprintf(log, "--- portcullis local: starting %s at %s\n", name, time.Now().Format(time.RFC3339))
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		log.Close()
		close(c.done)
	}()
	return c, nil
}

// exited reports whether the process has ended, with its error.
func (c *child) exited() (bool, error) {
	select {
	case <-c.done:
		return true, c.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (c *child) stop(grace time.Duration) error {
	if done, _ := c.exited(); done {
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	_ = c.cmd.Process.Kill()
	select {
	case <-c.done:
		return fmt.Errorf("%s did not stop within %s of SIGTERM; killed it", c.name, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) does not stop even after SIGKILL", c.name, c.cmd.Process.Pid)
	}
}

// failure describes a process that ended too early, with the end of its log.
func (c *child) failure(err error) error {
	return fmt.Errorf("%s exited (%v); its log %s ends with:\n%s", c.name, err, c.logPath, tail(c.logPath, 15))
}

// tail returns the last n lines of a file, indented.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "  (no log: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	lines = lines[max(0, len(lines)-n):]
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("  ")
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.String()
}
