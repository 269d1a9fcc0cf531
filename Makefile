# airlock: run untrusted commands in throw-away, locked-down containers.
SHELL := bash
.DEFAULT_GOAL := help

# testcontainers' reaper image cannot be pulled here (no registry); tests clean up
# after themselves by label instead.
export TESTCONTAINERS_RYUK_DISABLED := true

GO      ?= go
BIN     := bin/airlock
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
CMD     ?= echo "hello from airlock"; id; cat /etc/os-release 2>/dev/null || uname -a

PROBE   := bin/airlock-probe

.PHONY: help build images probe test hostile runsc bench run lint tidy

help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-z-]+:.*## /{printf "  make %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/airlock, a static binary
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/airlock

probe: ## build bin/airlock-probe, the static in-sandbox probe of the kernel surface
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(PROBE) ./integration/probe

runsc: ## install gVisor (Debian's runsc) and register it with the engine (SIGHUP, no restart)
	.ci/install-runsc

hostile: images probe ## the hostile-workload battery alone, under runc and (when the engine has it) runsc
	$(GO) test -race -count=1 -run 'TestHostile' -timeout 30m ./integration/

images: build ## build the sandbox images, offline and without cache
	$(BIN) images build

test: images ## vet, then unit and integration tests against the real engine; fails on leaked containers
	$(GO) vet ./...
	# -p 1: packages share one engine, and the integration suite removes and rebuilds
	# the sandbox image and counts every airlock container on it.
	$(GO) test -race -count=1 -p 1 -timeout 40m ./...
	@left=$$(docker ps -aq --filter label=io.airlock.managed=true); \
	if [ -n "$$left" ]; then echo "leaked containers: $$left"; exit 1; fi; \
	echo "no airlock container left on the engine"

bench: images ## policy check speed; run latency and throughput against docker run --rm and the bare API
	$(GO) test -run '^$$' -bench . -benchmem ./policy/
	$(GO) run ./integration/bench

run: images ## run a demo command in a sandbox (make run CMD='ls -la /')
	$(BIN) run -- '$(CMD)'

lint: ## gofmt and go vet
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

tidy: ## go mod tidy
	$(GO) mod tidy
