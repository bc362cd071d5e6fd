package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

// EnvoyVersion is the Envoy release whose xDS API the generated configuration targets.
const EnvoyVersion = "1.40.0"

// version is stamped at build time with -ldflags "-X main.version=..."; otherwise the
// module version recorded by the Go toolchain is used.
var version = ""

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fmt.Fprintf(stdout, "portcullis %s (envoy %s)\n", buildVersion(), EnvoyVersion)
	return 0
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
