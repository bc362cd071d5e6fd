package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// result is one line of `go test -bench` output: the benchmark's name (without the
// -GOMAXPROCS suffix), its iterations and every value it reported, by unit.
type result struct {
	Name       string
	Iterations int
	Values     map[string]float64
}

// benchLine matches "BenchmarkX/sub-2   <iterations>   <value> <unit>   <value> <unit> ...".
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

// parseResults reads benchmark results from go test output, ignoring every other line.
func parseResults(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[2])
		if err != nil {
			return nil, fmt.Errorf("%s: iterations %q: %w", m[1], m[2], err)
		}
		values, err := parseValues(m[3])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m[1], err)
		}
		out = append(out, result{Name: m[1], Iterations: n, Values: values})
	}
	return out, sc.Err()
}

// parseValues reads "<value> <unit>" pairs.
func parseValues(s string) (map[string]float64, error) {
	fields := strings.Fields(s)
	if len(fields)%2 != 0 {
		return nil, fmt.Errorf("values %q are not <value> <unit> pairs", s)
	}
	out := make(map[string]float64, len(fields)/2)
	for i := 0; i < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return nil, fmt.Errorf("value %q of %s: %w", fields[i], fields[i+1], err)
		}
		out[fields[i+1]] = v
	}
	return out, nil
}

// find returns the result of the named benchmark.
func find(results []result, name string) (result, bool) {
	for _, r := range results {
		if r.Name == name {
			return r, true
		}
	}
	return result{}, false
}
