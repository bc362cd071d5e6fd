package localenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestOwnedBy(t *testing.T) {
	root := "/data/local"
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{name: "etcd names its data directory", args: []string{"/bin/k8s/etcd", "--data-dir=/data/local/etcd"}, want: true},
		{name: "the API server names its certificates", args: []string{"kube-apiserver", "--tls-cert-file=/data/local/pki/apiserver.crt"}, want: true},
		{name: "Envoy names its bootstrap", args: []string{"envoy", "-c", "/data/local/envoy/demo_demo/bootstrap.yaml"}, want: true},
		{name: "portcullis local only names the directory", args: []string{"portcullis", "local", "--data-dir", "/data/local"}, want: false},
		{name: "a shell running portcullis local is not ours", args: []string{"sh", "-c", "portcullis local --data-dir /data/local"}, want: false},
		{name: "a sibling directory with the same prefix is not ours", args: []string{"etcd", "--data-dir=/data/local-2/etcd"}, want: false},
		{name: "the program path itself does not count", args: []string{"/data/local/etcd/tool"}, want: false},
		{name: "no arguments", args: nil, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OwnedBy(root, tt.args); got != tt.want {
				t.Fatalf("OwnedBy(%q, %q) = %v, want %v", root, tt.args, got, tt.want)
			}
		})
	}
}

// TestDataDirIsLockedWhileOpen: a second open fails naming the holder; after Close
// (as after the holder's death) it opens again, and a stale PID file is replaced.
func TestDataDirIsLockedWhileOpen(t *testing.T) {
	root := t.TempDir()
	first, err := OpenDataDir(root, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenDataDir(root, false)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d)", os.Getpid())) || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("second open: %v, want ErrInUse naming pid %d and --data-dir", err, os.Getpid())
	}
	first.Close()
	if err := os.WriteFile(first.PIDFile(), []byte("999999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := OpenDataDir(root, false)
	if err != nil {
		t.Fatalf("open after close with a stale PID file: %v", err)
	}
	defer again.Close()
	pid, _ := os.ReadFile(again.PIDFile())
	if strings.TrimSpace(string(pid)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("PID file holds %q, want this process", pid)
	}
}

func TestResetEmptiesTheDataDir(t *testing.T) {
	for _, tt := range []struct {
		name     string
		reset    bool
		wantKept bool
	}{
		{name: "without reset etcd's data is kept", reset: false, wantKept: true},
		{name: "with reset etcd's data is gone", reset: true, wantKept: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			d, err := OpenDataDir(root, false)
			if err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(d.Etcd(), "member")
			if err := os.WriteFile(marker, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			d.Close()
			d, err = OpenDataDir(root, tt.reset)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			_, statErr := os.Stat(marker)
			if kept := statErr == nil; kept != tt.wantKept {
				t.Fatalf("etcd data kept = %v, want %v", kept, tt.wantKept)
			}
		})
	}
}

// TestStopLeftoversEndsProcessesOfTheDataDir runs a real process that names a file in
// the data directory, as etcd would, and checks the sweep finds and ends it.
func TestStopLeftoversEndsProcessesOfTheDataDir(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sweep reads /proc (Linux only)")
	}
	root := t.TempDir()
	file := filepath.Join(root, "etcd", "wal")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("tail", "-f", file)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// tail opens the file a moment after it starts: look until it has.
	var pids []int
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		pids, err = Leftovers(root)
		if (err == nil && slices.Contains(pids, cmd.Process.Pid)) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || !slices.Contains(pids, cmd.Process.Pid) {
		t.Fatalf("Leftovers = %v, %v; want it to list tail (pid %d) within 10 s", pids, err, cmd.Process.Pid)
	}
	if err := StopLeftovers(root); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the leftover process still runs after StopLeftovers")
	}
}

func TestCheckPortsFreeNamesTheFlag(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	err = CheckPortsFree(Port{Port: taken, What: "kube-apiserver", Flag: "--apiserver-port"}, Port{Port: 0, What: "unset"})
	want := fmt.Sprintf("port %d (kube-apiserver) is in use: stop what holds it or pass --apiserver-port", taken)
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	l.Close()
	if err := CheckPortsFree(Port{Port: taken, What: "kube-apiserver"}); err != nil {
		t.Fatalf("a free port is reported: %v", err)
	}
}

func TestAssetsNamesTheMakeTarget(t *testing.T) {
	dir := t.TempDir()
	_, _, err := Assets(dir)
	want := "etcd not found in " + dir + ": run 'make tools' (or pass --assets-dir DIR)"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}
