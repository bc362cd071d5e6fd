// Command gcoverlap reads the runtime trace BenchmarkManagerOneBackendChanged writes
// when BENCH_MANAGER_TRACE is set and says, change by change, how long it took and how
// much of it overlapped a mark phase of the garbage collector: whether the slow changes
// are the ones that met a collection. The benchmark's own gc-tries cannot tell, as it
// counts the collections that finish within a change.
//
//	BENCH_MANAGER_TRACE=/tmp/change.trace BENCH_MANAGER_SIZES=10000 go test ./test/bench \
//	    -run '^$' -bench '^BenchmarkManagerOneBackendChanged$' -benchtime 60x
//	go run ./test/bench/cmd/gcoverlap /tmp/change.trace
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gcoverlap TRACE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	changes, err := read(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gcoverlap: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	writeReport(os.Stdout, changes)
}

// writeReport lists the changes slowest first and sums up those that overlapped a mark phase.
func writeReport(w io.Writer, changes []change) {
	slices.SortFunc(changes, func(a, b change) int { return int(b.took - a.took) })
	met := 0
	fmt.Fprintln(w, "change\ttook\tin a mark phase")
	for _, c := range changes {
		if c.marking > 0 {
			met++
		}
		fmt.Fprintf(w, "%d\t%s\t%s\n", c.index, c.took.Round(100*time.Microsecond), c.marking.Round(100*time.Microsecond))
	}
	fmt.Fprintf(w, "%d of %d changes overlapped a mark phase\n", met, len(changes))
}
