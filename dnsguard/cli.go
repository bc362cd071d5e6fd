package dnsguard

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/portcullis-io/portcullis/egress"
)

// resolveUsage heads `portcullis dnsguard resolve -h`.
const resolveUsage = `Usage: portcullis dnsguard resolve [--dns-server ADDR] [policy flags] [-o text|json] NAME...

Resolves each NAME exactly as the gateway's DNS trust guard would and prints the vetted
addresses, the refused ones with their reasons, the CNAME chain and the effective TTL.
Exit status: 0 when every name has at least one vetted address, 1 otherwise, 2 on a
usage error.

Flags:
`

// cliResult is one name in -o json.
type cliResult struct {
	Name       string                  `json:"name"`
	State      egress.ResolutionState  `json:"state"`
	Message    string                  `json:"message,omitempty"`
	CNAMEChain []string                `json:"cnameChain"`
	TTLSeconds int64                   `json:"ttlSeconds"`
	Vetted     []string                `json:"vetted"`
	Blocked    []egress.BlockedAddress `json:"blocked"`
}

// RunResolveCommand implements `portcullis dnsguard resolve`; args exclude the command
// words. Flags and names may be interleaved.
func RunResolveCommand(args []string, stdout, stderr io.Writer) int {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("portcullis dnsguard resolve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	output := fs.String("o", "text", "output format: text or json")
	fs.Usage = func() {
		fmt.Fprint(stderr, resolveUsage)
		fs.PrintDefaults()
	}
	names, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if usageErr := checkResolveUsage(names, *output); usageErr != "" {
		fmt.Fprintf(stderr, "portcullis dnsguard resolve: %s\n", usageErr)
		return 2
	}
	r, err := NewResolver(cfg, nil)
	if err != nil {
		fmt.Fprintf(stderr, "portcullis dnsguard resolve: %v\n", err)
		return 2
	}
	results := resolveAll(context.Background(), r, names)
	if err := printResults(stdout, *output, results); err != nil {
		fmt.Fprintf(stderr, "portcullis dnsguard resolve: %v\n", err)
		return 1
	}
	for _, res := range results {
		if len(res.Vetted) == 0 {
			return 1
		}
	}
	return 0
}

// parseInterleaved parses flags that may follow names, returning the names in order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var names []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return names, nil
		}
		if rest[0] == "--" {
			return append(names, rest[1:]...), nil
		}
		names = append(names, rest[0])
		args = rest[1:]
	}
}

func checkResolveUsage(names []string, output string) string {
	switch {
	case output != "text" && output != "json":
		return fmt.Sprintf("-o %q: want text or json", output)
	case len(names) == 0:
		return "no NAME given (try -h)"
	}
	return ""
}

// resolveAll resolves names concurrently (bounded) and returns results in input order.
func resolveAll(ctx context.Context, r *Resolver, names []string) []Result {
	results := make([]Result, len(names))
	sem := make(chan struct{}, DefaultWorkers)
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = r.Resolve(ctx, n)
		})
	}
	wg.Wait()
	return results
}

func printResults(w io.Writer, format string, results []Result) error {
	if format == "json" {
		out := make([]cliResult, len(results))
		for i, r := range results {
			out[i] = toCLIResult(r)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, r := range results {
		if err := printText(w, r); err != nil {
			return err
		}
	}
	return nil
}

func toCLIResult(r Result) cliResult {
	c := cliResult{
		Name: r.Name, State: r.State, Message: r.Message,
		CNAMEChain: append([]string{}, r.Chain...),
		TTLSeconds: int64(r.TTL.Seconds()),
		Vetted:     []string{},
		Blocked:    append([]egress.BlockedAddress{}, r.Blocked...),
	}
	for _, a := range r.Vetted {
		c.Vetted = append(c.Vetted, a.String())
	}
	return c
}

func printText(w io.Writer, r Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", r.Name, r.State)
	if r.TTL > 0 {
		fmt.Fprintf(&b, " (ttl %v)", r.TTL)
	}
	b.WriteString("\n")
	if len(r.Chain) > 0 {
		fmt.Fprintf(&b, "  cname chain: %s -> %s\n", r.Name, strings.Join(r.Chain, " -> "))
	}
	for _, a := range r.Vetted {
		fmt.Fprintf(&b, "  vetted:  %s\n", a)
	}
	for _, bl := range r.Blocked {
		fmt.Fprintf(&b, "  blocked: %s: %s\n", bl.IP, bl.Reason)
	}
	if r.Message != "" {
		fmt.Fprintf(&b, "  why: %s\n", r.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
