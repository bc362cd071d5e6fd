package quickstart

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// proc is a running process and its command line.
type proc struct {
	pid  int
	args []string
}

func (p proc) String() string { return strconv.Itoa(p.pid) + " " + strings.Join(p.args, " ") }

// processesNaming lists the processes other than this one whose command line mentions
// dir anywhere: everything `portcullis local` starts for a data directory names it
// (etcd's data, the API server's certificates, Envoy's bootstrap), and so does the
// `portcullis local` process itself. Independent of the code under test on purpose.
func processesNaming(dir string) ([]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(data, []byte(dir)) {
			continue
		}
		out = append(out, proc{pid: pid, args: strings.Split(string(bytes.TrimRight(data, "\x00")), "\x00")})
	}
	return out, nil
}

// programs returns the base names of the processes' executables.
func programs(ps []proc) map[string]bool {
	names := map[string]bool{}
	for _, p := range ps {
		names[filepath.Base(p.args[0])] = true
	}
	return names
}
