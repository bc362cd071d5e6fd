package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// step is one `go test -bench` run.
type step struct {
	key       string // what render looks the results up by
	bench     string
	benchtime string
	env       []string
	// profileEnv, when set, is the environment variable that names the file the
	// benchmark writes a CPU profile to; the report lists the functions of this module
	// it spent the most time in, to say where the time goes.
	profileEnv string
}

// stepRun is a step's command line and results.
type stepRun struct {
	step
	command string
	results []result
	// hot lists the module's functions by cumulative CPU time, for a profiled step.
	hot []hotFunction
}

// steps lists the runs, one per performance target (the "target" column of results.md).
func steps(c config) []step {
	out := []step{
		{key: "translation", bench: "^BenchmarkFullTranslation$", benchtime: fmt.Sprintf("%dx", c.translationRuns),
			env: []string{"BENCH_SIZES=" + c.sizes, "BENCH_MULTI=" + c.multi}},
		{key: "change", bench: "^BenchmarkOneBackendChanged$", benchtime: fmt.Sprintf("%dx", c.changeRuns),
			env: []string{"BENCH_SIZES=" + c.sizes}, profileEnv: "BENCH_CHANGE_PROFILE"},
		{key: "delta", bench: "^BenchmarkDeltaOneBackendChanged$", benchtime: fmt.Sprintf("%dx", c.changeRuns),
			env: []string{"BENCH_SIZES=" + c.sizes}},
		{key: "route-change", bench: "^BenchmarkOneRouteChanged$", benchtime: fmt.Sprintf("%dx", c.changeRuns),
			env: []string{"BENCH_SIZES=" + c.sizes}},
	}
	out = append(out, processStep(c.processSizes))
	out = append(out, step{key: "tenancy-translation", bench: "^BenchmarkTenancyTranslation$", benchtime: fmt.Sprintf("%dx", c.translationRuns),
		env: []string{"BENCH_TENANCY=" + c.tenancy}})
	if !c.skipChurn {
		out = append(out, step{key: "churn", bench: "^BenchmarkPodChurn$", benchtime: fmt.Sprintf("%dx", c.churnEvents),
			env: []string{"BENCH_TENANCY=" + c.churnTenancy, fmt.Sprintf("BENCH_CHURN_RATE=%d", c.churnRate)}})
	}
	if !c.skipPropagation {
		out = append(out, step{key: "propagation", bench: "^BenchmarkPropagation$", benchtime: fmt.Sprintf("%dx", c.tries),
			env: []string{fmt.Sprintf("BENCH_PROPAGATION_ROUTES=%d", c.present)}},
			envoyApplyStep(c.envoyApplySizes))
	}
	out = append(out, managerSteps(c)...)
	out = append(out, providerStep(c.ensureGateways))
	if !c.skipDataPlane {
		load := []string{"BENCH_DATAPLANE_ROUND=" + c.round, fmt.Sprintf("BENCH_DATAPLANE_ROUNDS=%d", c.rounds), fmt.Sprintf("BENCH_DATAPLANE_CONCURRENCY=%d", c.conc)}
		out = append(out,
			step{key: "dataplane", bench: "^BenchmarkDataPlane$", benchtime: "1x", env: load},
			step{key: "dataplane-isolation", bench: "^BenchmarkDataPlaneIsolation$", benchtime: "1x", env: load},
			step{key: "tunnel", bench: "^BenchmarkConnectTunnel$", benchtime: "3x"})
	}
	return append(out,
		step{key: "dns", bench: "^BenchmarkDNS(Reresolve|StoreResolve)$", benchtime: fmt.Sprintf("%dx", c.dnsRuns),
			env: []string{fmt.Sprintf("BENCH_DNS_NAMES=%d", c.dnsNames)}},
		step{key: "policy", bench: "^BenchmarkAddressPolicyCheck$", benchtime: "1s"},
	)
}

// runStep runs one step from the repository root, echoing its output.
func runStep(root string, s step) (stepRun, error) {
	args := []string{"test", "-count=1", "-timeout=60m", "-run", "^$", "-bench", s.bench, "-benchtime", s.benchtime, "-benchmem", "./test/bench/"}
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = root, append(os.Environ(), s.env...)
	var profile string
	if s.profileEnv != "" {
		dir, err := os.MkdirTemp("", "bench-profile")
		if err != nil {
			return stepRun{}, err
		}
		defer os.RemoveAll(dir)
		profile = filepath.Join(dir, "cpu.out")
		cmd.Env = append(cmd.Env, s.profileEnv+"="+profile)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, &out), os.Stderr
	line := strings.Join(append(s.env, "go "+quoteArgs(args)), " ")
	fmt.Fprintf(os.Stderr, "report: %s\n", line)
	if err := cmd.Run(); err != nil {
		return stepRun{}, fmt.Errorf("%s: %w", line, err)
	}
	results, err := parseResults(&out)
	if err != nil {
		return stepRun{}, fmt.Errorf("%s: %w", line, err)
	}
	if len(results) == 0 {
		return stepRun{}, fmt.Errorf("%s: no benchmark results (skipped for want of a tool? see above)", line)
	}
	run := stepRun{step: s, command: line, results: results}
	if profile != "" {
		if run.hot, err = hotFunctions(root, profile); err != nil {
			return stepRun{}, fmt.Errorf("%s: reading the profile: %w", line, err)
		}
	}
	return run, nil
}

// quoteArgs quotes the arguments a shell would otherwise mangle.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()* ") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// repoRoot is the directory holding go.mod, upwards from the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}
