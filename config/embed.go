// Package config carries the CRDs in the binary, so `portcullis local` installs the
// exact CRDs it was built with and needs no source tree at run time.
package config

import "embed"

// CRDs holds our CRDs (crd/bases), the Gateway API standard-channel CRDs
// (crd/gateway-api, with the Gateway API's own admission policy for safe upgrades) and
// the experimental XBackend CRD (components/xbackend).
//
//go:embed crd/bases/*.yaml crd/gateway-api/*.yaml components/xbackend/*.yaml
var CRDs embed.FS

// CRDDirs are the directories of CRDs in the order they are installed.
var CRDDirs = []string{"crd/gateway-api", "crd/bases"}

// ExperimentalCRDDirs hold CRDs that `portcullis translate` validates its input with
// but nothing installs unless asked (the XBackend CRD: `make deploy XBACKEND=true`).
var ExperimentalCRDDirs = []string{"components/xbackend"}
