package main

import (
	"fmt"
	"io"

	"github.com/portcullis-io/portcullis/dnsguard"
)

// runDNSGuard dispatches `portcullis dnsguard <verb>`; resolve is the only verb.
func runDNSGuard(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "resolve" {
		fmt.Fprintln(stderr, "Usage: portcullis dnsguard resolve [--dns-server ADDR] [policy flags] [-o text|json] NAME...")
		return 2
	}
	return dnsguard.RunResolveCommand(args[1:], stdout, stderr)
}
