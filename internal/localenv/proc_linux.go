package localenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// sysProcAttr puts a child in its own process group, so a Ctrl-C in the terminal
// reaches only `portcullis local`, which then stops the children in order; and makes
// the kernel send SIGTERM to the child when its parent dies, so even a killed
// `portcullis local` leaves nothing running. (The signal follows the death of the
// starting OS thread; the Go runtime does not end its threads while the program runs.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// Leftovers lists the processes started for the data directory root that still run
// (see OwnedBy), found by their command lines in /proc.
func Leftovers(root string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if args := cmdline(pid); len(args) > 0 && OwnedBy(root, args) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// cmdline returns a process's arguments; none for a zombie or a vanished process.
func cmdline(pid int) []string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(data) == 0 {
		return nil
	}
	var args []string
	for _, a := range bytes.Split(bytes.TrimRight(data, "\x00"), []byte{0}) {
		args = append(args, string(a))
	}
	return args
}

// StopLeftovers ends the processes a previous run for root left behind (SIGTERM, then
// SIGKILL after 10 s), so their ports and etcd's lock are free again.
func StopLeftovers(root string) error {
	for _, step := range []struct {
		sig   syscall.Signal
		grace time.Duration
	}{{syscall.SIGTERM, 10 * time.Second}, {syscall.SIGKILL, 5 * time.Second}} {
		pids, err := Leftovers(root)
		if err != nil || len(pids) == 0 {
			return err
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, step.sig)
		}
		deadline := time.Now().Add(step.grace)
		for time.Now().Before(deadline) {
			if pids, _ = Leftovers(root); len(pids) == 0 {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	pids, _ := Leftovers(root)
	if len(pids) > 0 {
		return fmt.Errorf("processes of a previous run with %s do not stop: %v", root, pids)
	}
	return nil
}
