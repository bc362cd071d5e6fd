package localenv

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ErrInUse is returned when another process holds the data directory.
var ErrInUse = errors.New("data directory in use")

// DataDir is a data directory this process holds the lock of.
type DataDir struct {
	Layout
	lock  *os.File
	close sync.Once
}

// OpenDataDir creates the directory if needed, takes its lock, stops processes a
// previous run left behind (they hold its ports and etcd's lock), empties it when
// reset is set, and records this process's ID.
func OpenDataDir(root string, reset bool) (*DataDir, error) {
	l := Layout{Root: root}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	lock, err := lockFile(l.LockFile())
	if err != nil {
		if errors.Is(err, ErrInUse) {
			return nil, fmt.Errorf("%w: another portcullis local%s runs with %s and holds its ports; stop it (Ctrl-C where it runs) or pass another --data-dir and other ports", ErrInUse, holder(l), root)
		}
		return nil, err
	}
	d := &DataDir{Layout: l, lock: lock}
	if err := d.prepare(reset); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *DataDir) prepare(reset bool) error {
	if err := StopLeftovers(d.Root); err != nil {
		return err
	}
	if reset {
		for _, p := range d.generated() {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("reset: %w", err)
			}
		}
	}
	for _, dir := range []string{d.Etcd(), d.PKI(), d.Logs(), d.Envoy()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	return os.WriteFile(d.PIDFile(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
}

// Close removes the PID file and releases the lock. It may be called more than once.
// Only the first call acts: a later one must not remove the PID file of a run that took
// the directory since.
func (d *DataDir) Close() {
	d.close.Do(func() {
		_ = os.Remove(d.PIDFile())
		_ = d.lock.Close()
	})
}

// holder names the process recorded in the PID file, if any.
func holder(l Layout) string {
	data, err := os.ReadFile(l.PIDFile())
	if err != nil {
		return ""
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
		return fmt.Sprintf(" (pid %d)", pid)
	}
	return ""
}
