package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// command is one subcommand of the portcullis binary.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands that exist in this build. Keep it the single place a
// subcommand is registered so `portcullis help` never names one that is missing.
var commands = map[string]command{
	"dnsguard":  {summary: "resolve names as the gateway would and show what the DNS guard vets or blocks (dnsguard resolve NAME...)", run: runDNSGuard},
	"local":     {summary: "run everything on this machine: etcd, kube-apiserver, the manager and Envoy (--demo adds a demo API)", run: runLocal},
	"manager":   {summary: "run the operator: watch Gateway API objects and Backends, program Envoy, write statuses", run: runManager},
	"translate": {summary: "translate objects from files offline: statuses, Envoy configuration or a static bootstrap", run: runTranslate},
	"version":   {summary: "print the version of portcullis and the Envoy version it targets", run: runVersion},
}

// run dispatches args to a subcommand and returns the process exit code: 0 on success,
// 1 when the subcommand failed, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "portcullis: unknown subcommand %q; available: %s\n", args[0], strings.Join(commandNames(), ", "))
		return 2
	}
	return cmd.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "portcullis: a Kubernetes egress gateway.")
	fmt.Fprintln(w, "\nUsage: portcullis <subcommand> [flags]\n\nSubcommands:")
	for _, name := range commandNames() {
		fmt.Fprintf(w, "  %-10s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'portcullis <subcommand> -h' for a subcommand's flags.")
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
