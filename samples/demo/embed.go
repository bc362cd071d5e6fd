// Package demo carries the demo's YAML in the binary, so `portcullis local --demo`
// applies exactly these files without the source tree.
package demo

import "embed"

// Files holds the demo's objects, applied in file-name order (the namespace first).
//
//go:embed *.yaml
var Files embed.FS
