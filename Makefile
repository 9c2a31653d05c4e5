# konductor. `make run` is the local environment; `make test` is every test.
SHELL := /usr/bin/env bash
GO ?= go
BIN := bin/konductor
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildDate=$(BUILD_DATE)

.PHONY: conformance test-reads build install image run test test-unit test-integration test-faults test-fuzz fuzz soak envtest-assets helm chart-sync bench bench-attached bench-e2e bench-scale lint manifests

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/konductor

# Installs the command and, beside it, the kubectl plugin kubectl-konductor (a symlink: kubectl
# runs `kubectl konductor explain ...` as `kubectl-konductor explain ...`, and konductor takes
# the current kubeconfig context as kubectl does) with kubectl_complete-konductor, which kubectl
# runs to complete the plugin's arguments. BINDIR must be on PATH for kubectl to find them.
BINDIR ?= $(shell $(GO) env GOPATH)/bin
install: build
	mkdir -p $(BINDIR)
	install -m 0755 $(BIN) $(BINDIR)/konductor
	ln -sf konductor $(BINDIR)/kubectl-konductor
	printf '#!/bin/sh\n# kubectl completes `kubectl konductor ...` with this (kubectl 1.26+).\nexec konductor __complete "$$@"\n' > $(BINDIR)/kubectl_complete-konductor
	chmod 0755 $(BINDIR)/kubectl_complete-konductor

# The multi-platform OCI image, without a container engine (hack/image, docs/image.md): static
# binaries on a base made there (CA roots from golang.org/x/crypto/x509roots/fallback, user
# 65532), into dist/image/: oci/ (the OCI layout of the index; `crane push dist/image/oci REF`),
# image.oci.tar (the same as one file) and <os>-<arch>.docker.tar (`docker load`, `kind load
# image-archive`). Reproducible: the same commit, Go version and variables give the same digest
# (every time in it is SOURCE_DATE_EPOCH, by default the last commit's).
IMAGE ?= konductor
TAG ?= $(VERSION)
PLATFORMS ?= linux/amd64,linux/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
image:
	$(GO) run ./hack/image --image $(IMAGE) --tag $(TAG) --version $(VERSION) --platforms $(PLATFORMS) --source-date-epoch $(SOURCE_DATE_EPOCH) --out dist/image

# The local environment: kube-apiserver + etcd, the Kong emulator and konductor, with examples/.
run: build
	hack/run-local.sh

# Builds kube-apiserver and etcd from the Go module proxy once (about 7 minutes cold), then reuses them.
envtest-assets:
	@hack/envtest-assets.sh

# Builds helm from the Go module proxy once (about 4 minutes cold), then reuses it; the chart
# tests need it.
helm:
	@hack/helm.sh

# Copies Kong's CRDs and the RBAC rules of config/ into the Helm chart (the chart tests fail
# while they differ).
chart-sync:
	rm -f charts/konductor/crds/*.yaml
	cp $$(ls config/crd/*.yaml | grep -v kustomization.yaml) charts/konductor/crds/
	cp config/rbac/cluster_role.yaml config/rbac/leader_election_role.yaml charts/konductor/files/rbac/

# Unit tests: no API server needed. With the race detector, but for the translator: it is pure
# (one goroutine) but for its parallel and incremental paths, whose tests run with it; the
# rest runs without (its property tests and fuzz corpora take two minutes under the detector,
# twenty seconds without). Each fuzz target's corpus includes thousands of generated inputs
# (a fixed sample; `make fuzz` searches with coverage guidance).
RACE_TRANSLATOR_TESTS := Parallel|Spread|Settle|TestIncrementalMatchesBuild$$
test-unit:
	$(GO) test -race $$($(GO) list ./... | grep -v -e /test/integration -e '/internal/translator$$' -e '/hack/image$$')
	# The image builder: the stand-in's images under the race detector (-short), then
	# TestRealKonductor, konductor's own linux/amd64 image, whose binary it runs, without it (the
	# detector makes compressing and hashing konductor's 60 MB layer a minute instead of
	# seconds). Its build of konductor shares no compiled package with the tests' (-trimpath,
	# CGO_ENABLED=0): 5 to 9 minutes on two cores with a cold build cache, then about 15 s.
	# -count=1: the `go build` they run reads sources the test cache does not track.
	$(GO) test -race -short -count=1 ./hack/image
	$(GO) test -count=1 -timeout 30m -run '^TestRealKonductor$$' ./hack/image
	$(GO) test ./internal/translator
	$(GO) test -race -short -run '$(RACE_TRANSLATOR_TESTS)' ./internal/translator
	# The executable's start pages released in a position-independent executable too, whose
	# relocated read-only data must be kept (cmd/konductor/startpages.go); CGO_ENABLED=0 links it
	# without a C toolchain.
	CGO_ENABLED=0 $(GO) test -buildmode=pie -count=1 -run 'TestReleasedExecutable' ./cmd/konductor/

# Integration tests on a real kube-apiserver + etcd, one line per test (and helm, for the chart).
test-integration: helm
	hack/test-integration.sh

# The Gateway API conformance suite with traffic (TestGatewayAPIConformance, in `make test`
# under Kong's default router) under both router flavors, each run's ConformanceReport
# written to docs/conformance/ with the commit as the implementation's version; the features
# tested are those the GatewayClass declares (internal/gatewayapi/features.go).
conformance:
	@mkdir -p docs/conformance
	set -o pipefail; for flavor in traditional_compatible expressions; do \
	  KONDUCTOR_CONFORMANCE_ROUTER=$$flavor KONDUCTOR_CONFORMANCE_VERSION=$(VERSION) \
	  KONDUCTOR_CONFORMANCE_REPORT=$(CURDIR)/docs/conformance/konductor-router-$$flavor.yaml \
	  KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) $(GO) test -count=1 -timeout 30m -v -run '^TestGatewayAPIConformance$$' ./test/integration/ \
	  | grep -E '^(--- |ok|FAIL)|^    --- FAIL|conformance: |GATEWAY-|declares' || exit 1; \
	done

# The issue's fault tests at full length: the gateway fails half of its requests with 500 for
# a minute (`make test` runs it for 3 s); the API server stopped for 30 s (10 s in `make test`).
test-faults:
	KONDUCTOR_FAULT_SECONDS=60 KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) $(GO) test -race -count=1 -timeout 10m -run TestAdminAPIFaultsAreSurvived ./test/integration/
	KONDUCTOR_OUTAGE_SECONDS=30 KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) $(GO) test -race -count=1 -timeout 10m -run TestAPIServerOutage -v ./test/integration/

# The failover soak at full length: database mode, 2,000 objects, a writer changing Ingresses
# throughout, 100 leader changes alternating clean stops and kills (`make test` runs a short
# version: 120 objects, 3 leader changes, 10 changes). Recorded in docs/performance.md.
# Then the seed in requests (test/integration/traffic_test.go) at full length: 100 Ingresses
# and 100 HTTPRoutes under steady traffic through the emulator's proxy across a rolling
# restart, 20 leader changes, a 30 s API server outage and Kong restarts, 0 failed requests
# (`make test`: 15 + 15 routes, 3 leader changes, 10 s), and the barrier-off control.
soak:
	KONDUCTOR_SOAK=full KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) $(GO) test -race -count=1 -timeout 150m -v -run '^TestFailoverSoak$$' ./test/integration/
	KONDUCTOR_SOAK=full KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) $(GO) test -race -count=1 -timeout 60m -v -run '^TestTraffic' ./test/integration/

# Fuzzing: translation and rendering must never panic or hang, whatever the objects.
# FuzzTranslateObjects builds objects of every translated kind straight from the input bytes
# (references between them, random values and annotations; a few hundred inputs a second) and
# also checks Incremental against a full Build; FuzzTranslate mutates the golden cases' YAML
# through the manifest parser and the store (class filtering). go test runs one fuzz target
# at a time. Crashers land in internal/translator/testdata/fuzz/<target>/ and are kept there
# as regression seeds, which every `go test` runs. Each input that reaches new code is
# minimized for at most 1 s (go's default, 60 s, stalls the search for minutes on these
# inputs of up to a kilobyte).
#
# `make test` does not fuzz: each target's corpus, with thousands of generated inputs, runs
# with the unit tests (the instrumented build coverage guidance needs costs minutes on two
# cores). `make test-fuzz` is a short guided search, a number of inputs a target, not a
# duration (about 10-40 s each here, after the build): go 1.26's fuzzing coordinator can fail
# a run whose -fuzztime duration ends while a worker is busy ("context deadline exceeded", no
# crasher; go.dev/issue/75804, fixed in go 1.27), and a count has no deadline to race.
# `make fuzz` runs 10 minutes a target, where that end-of-run report may still appear: it is a
# failure only if a crasher was written.
FUZZ_OBJECTS ?= 5000x
FUZZ_MANIFESTS ?= 2000x
FUZZ_REGEX ?= 250000x
test-fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzTranslateObjects$$' -fuzztime $(FUZZ_OBJECTS) -fuzzminimizetime 1s ./internal/translator
	$(GO) test -run '^$$' -fuzz '^FuzzTranslate$$' -fuzztime $(FUZZ_MANIFESTS) -fuzzminimizetime 1s ./internal/translator
	$(GO) test -run '^$$' -fuzz '^FuzzRustRegex$$' -fuzztime $(FUZZ_REGEX) ./internal/kongrules
fuzz: FUZZ_OBJECTS = 10m
fuzz: FUZZ_MANIFESTS = 10m
fuzz: FUZZ_REGEX = 10m
fuzz: test-fuzz

# TestEveryReadIsRecordedRandomly over many more of the fuzz generator's snapshots than the
# 2,000 `make test` checks, from another seed each run (about 1 minute per 20,000 here): a
# read the translator makes without recording it in the object graph fails it.
READS_CASES ?= 50000
test-reads:
	KONDUCTOR_READS_CASES=$(READS_CASES) KONDUCTOR_READS_SEED=$$(date +%s) $(GO) test -count=1 -run '^TestEveryReadIsRecordedRandomly$$' ./internal/translator

# Unit tests (with the fuzz corpora) and integration tests, with the race detector.
test: test-unit test-integration

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

# 1,000 HTTPRoutes on one Gateway listener on a real kube-apiserver: how long until the
# listener's attachedRoutes reads 1,000, and 0 after they are deleted (docs/performance.md).
bench-attached:
	KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) $(GO) test -count=1 -timeout 15m -run '^$$' -bench BenchmarkAttachedRoutes -benchtime 1x ./test/integration/

# The controller's own share of one change (the cache's snapshot, the incremental translation,
# the DB-less body rendered) at 3,000 to 100,000 Ingresses, in memory: the sizes an API server
# on a small machine cannot be filled with (issue #45; docs/performance.md). INGRESSES= sets
# the sizes.
INGRESSES ?= 3000,10000,30000,100000
bench-scale:
	KONDUCTOR_BENCH_INGRESSES=$(INGRESSES) $(GO) test -count=1 -timeout 60m -run '^$$' -bench 'BenchmarkRoundOneIngressChanged/.*/follow' -benchmem -benchtime 200x ./internal/store/

# The end-to-end benchmark (test/benche2e): a real kube-apiserver, a Kong that records every
# POST /config, N Ingresses with their Services and EndpointSlices, K host changes, the
# controller's binary as its own process. N=3000 K=20 by default; SECRETS=1000 adds unrelated
# 100 KB Secrets, STATUS=off turns status writes off, KONG=emulator validates each push.
# `make test` runs a tiny version (TestBenchE2ESmall).
bench-e2e: build
	KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) $(GO) run ./cmd/bench-e2e --binary $(BIN)

# Renders both overlays (the integration tests also apply them to a real API server, dry run).
manifests:
	kubectl kustomize config/overlays/dbless >/dev/null && kubectl kustomize config/overlays/database >/dev/null

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
