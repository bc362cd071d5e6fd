// Command portcullis is the Portcullis egress gateway: one binary whose subcommands run
// the operator in a cluster, run everything on one machine, or translate offline.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
