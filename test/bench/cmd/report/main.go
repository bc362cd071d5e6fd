// Command report runs the benchmarks of test/bench at the sizes their performance targets
// are stated for, prints every benchmark line as it comes, and writes the
// results as Markdown tables, with the machine they ran on and the commands that
// produced them. `make bench` runs it; it writes test/bench/results.md by default.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// config are the sizes of one report.
type config struct {
	out               string
	sizes, multi      string
	translationRuns   int
	changeRuns        int
	present, tries    int
	dnsNames, dnsRuns int
	round             string
	rounds, conc      int
	skipPropagation   bool
	skipDataPlane     bool
	tenancy           string
	churnTenancy      string
	churnEvents       int
	churnRate         int
	skipChurn         bool
	manager           managerConfig
	processSizes      string
	envoyApplySizes   string
	ensureGateways    string
}

func main() {
	var c config
	flag.StringVar(&c.out, "out", "test/bench/results.md", "the Markdown file to write (relative to the repository root)")
	flag.StringVar(&c.sizes, "sizes", "100,1000,10000", "Backend and HTTPRoute counts on one Gateway")
	flag.StringVar(&c.multi, "multi", "10x1000", "the many-Gateway case, <gateways>x<backends per gateway>")
	flag.IntVar(&c.translationRuns, "translation-runs", 3, "cold translations per size")
	flag.IntVar(&c.changeRuns, "change-runs", 30, "changes per size")
	flag.IntVar(&c.present, "present", 1000, "routes present before the propagation tries")
	flag.IntVar(&c.tries, "tries", 60, "propagation tries")
	flag.IntVar(&c.dnsNames, "dns-names", 10000, "names the DNS guard resolves")
	flag.IntVar(&c.dnsRuns, "dns-runs", 3, "re-resolutions of every name")
	flag.StringVar(&c.round, "round", "1s", "length of one data-plane round per side")
	flag.IntVar(&c.rounds, "rounds", 40, "data-plane rounds per side (many short rounds give a steadier median on a shared machine)")
	flag.IntVar(&c.conc, "concurrency", 16, "concurrent requests of the data-plane load generator")
	flag.StringVar(&c.tenancy, "tenancy", "10000/500/10000", "the tenancy translation, <backends>/<namespaces>/<pods> (also run without the pods)")
	flag.StringVar(&c.churnTenancy, "churn-tenancy", "1000/500/10000,10000/500/10000", "the pod churn workloads, <backends>/<namespaces>/<pods>,...")
	flag.IntVar(&c.churnEvents, "churn-events", 1000, "pod events per churn workload")
	flag.IntVar(&c.churnRate, "churn-rate", 100, "pod events per second")
	flag.BoolVar(&c.skipChurn, "skip-churn", false, "leave out the pod churn benchmark (needs Envoy)")
	flag.BoolVar(&c.skipPropagation, "skip-propagation", false, "leave out the propagation benchmark (needs kube-apiserver, etcd and Envoy)")
	flag.BoolVar(&c.skipDataPlane, "skip-dataplane", false, "leave out the data-plane benchmark (needs Envoy)")
	registerManagerFlags(&c.manager)
	registerProcessFlags(&c.processSizes)
	flag.StringVar(&c.envoyApplySizes, "envoy-apply-sizes", "1000,10000", "Backend counts of Envoy's half of a change (section 14)")
	flag.StringVar(&c.ensureGateways, "ensure-gateways", "10,100", "Gateway counts of the provisioning pass (section 15)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
}

func run(c config) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	before := machineFacts(root)
	var runs []stepRun
	for _, s := range steps(c) {
		r, err := runStep(root, s)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	doc := render(c, before, loadAverage(), runs)
	fmt.Print("\n", doc)
	path := c.out
	if !strings.HasPrefix(path, "/") {
		path = root + "/" + path
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "report: wrote %s\n", path)
	return nil
}
