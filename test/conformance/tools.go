//go:build tools

// Package tools pins the conformance commands this module builds so `go mod tidy` keeps
// their dependencies; echo-basic is built with
// `go build sigs.k8s.io/gateway-api/conformance/echo-basic`.
package tools

import _ "sigs.k8s.io/gateway-api/conformance/echo-basic"
