package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
)

// hotFunction is one function of the module and the share of the profiled CPU time
// spent in it and what it calls.
type hotFunction struct {
	name    string
	percent float64
}

// modulePrefix marks the module's own functions in a profile.
const modulePrefix = "github.com/portcullis-io/portcullis/"

// maxHot bounds the functions a report lists.
const maxHot = 15

// hotFunctions reads a CPU profile with `go tool pprof -top -cum` and returns the
// module's functions (the benchmark itself left out) by cumulative share, highest first.
// The profile covers only the timed changes (the benchmark starts and stops it).
func hotFunctions(root, profile string) ([]hotFunction, error) {
	cmd := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=400", profile)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	return parseTop(out), nil
}

// parseTop reads pprof -top lines: "flat flat% sum% cum cum% name".
func parseTop(out []byte) []hotFunction {
	var hot []hotFunction
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() && len(hot) < maxHot {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], modulePrefix) || strings.Contains(f[5], "/test/bench.") {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(f[4], "%"), 64)
		if err != nil {
			continue
		}
		hot = append(hot, hotFunction{name: strings.TrimPrefix(strings.Join(f[5:], " "), modulePrefix), percent: pct})
	}
	return hot
}
