package main

import (
	"flag"
	"fmt"
	"strings"
)

// The whole-process targets of `portcullis translate` (issue 16), stated for 10,000
// Backends and HTTPRoutes.
const (
	processTargetSize = 10000
	processWallMs     = 2000
	processRSSMiB     = 400
)

// registerProcessFlags adds the sizes of the whole-process translation.
func registerProcessFlags(sizes *string) {
	flag.StringVar(sizes, "process-sizes", "1000,10000,30000", "Backend and HTTPRoute counts of `portcullis translate` run as a whole process")
}

// processStep runs BenchmarkTranslateProcess.
func processStep(sizes string) step {
	return step{key: "process", bench: "^BenchmarkTranslateProcess$", benchtime: "3x", env: []string{"BENCH_PROCESS_SIZES=" + sizes}}
}

// renderProcessSummary writes the summary rows of the whole-process translation.
func renderProcessSummary(b *strings.Builder, rs []result) {
	sorted := bySize(rs)
	for _, r := range sorted {
		if backendsOf(r.Name) != processTargetSize {
			continue
		}
		wall, rss := r.Values["wall-ms"], r.Values["peak-rss-MiB"]
		fmt.Fprintf(b, "| `portcullis translate` as a whole process, %d Backends + HTTPRoutes (FQDN, System CA, SNI) | < %d s, < %d MiB peak RSS | %.2f s, %.0f MiB | %s |\n",
			processTargetSize, processWallMs/1000, processRSSMiB, wall/1000, rss, met(wall < processWallMs && rss < processRSSMiB))
	}
	if len(sorted) > 1 {
		small, large := sorted[0], sorted[len(sorted)-1]
		per := func(r result) float64 { return r.Values["cpu-ms"] / float64(max(backendsOf(r.Name), 1)) }
		growth := 0.0
		if per(small) > 0 {
			growth = per(large) / per(small)
		}
		fmt.Fprintf(b, "| ... its growth | linear | %.2f× the per-Backend CPU time of %d Backends at %d | %s |\n",
			growth, backendsOf(small.Name), backendsOf(large.Name), met(growth <= 1.5))
	}
}

// renderProcess writes the section of the whole-process translation.
func renderProcess(b *strings.Builder, rs []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 13. `portcullis translate` as a whole process\n\nBenchmarkTranslateProcess: `portcullis translate -f FILE > /dev/null` as a user " +
		"runs it, from reading the file to the last byte of YAML: the Gateway of samples/00 and N Backends (FQDN, `wellKnownCACertificates: System`, " +
		"an explicit `serverName`) with one HTTPRoute each, over 50 namespaces, no `--address` (no name resolves). Loading, validation against the " +
		"built-in CRDs (schemas and CEL rules, as kube-apiserver would), translation, building and writing the YAML. Wall and CPU time are the mean " +
		"of the runs; peak RSS is the largest of them (getrusage).\n\n")
	b.WriteString("| Backends + HTTPRoutes | wall ms | CPU ms | peak RSS MiB |\n| ---: | ---: | ---: | ---: |\n")
	for _, r := range bySize(rs) {
		v := r.Values
		fmt.Fprintf(b, "| %d | %.0f | %.0f | %.0f |\n", backendsOf(r.Name), v["wall-ms"], v["cpu-ms"], v["peak-rss-MiB"])
	}
	b.WriteString("\n")
}
