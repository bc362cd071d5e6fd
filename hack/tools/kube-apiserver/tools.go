//go:build tools

// Package tools pins the Kubernetes commands this module builds so `go mod tidy` keeps
// their dependencies: kube-apiserver for the test control plane (make envtest-assets),
// and the node components and kubectl for the single-node cluster (make cluster-up).
// Each binary is built with `go build k8s.io/kubernetes/cmd/<name>`.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
