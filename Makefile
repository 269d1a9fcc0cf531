# airlock: run untrusted commands in throw-away, locked-down containers.
SHELL := bash
.DEFAULT_GOAL := help

# testcontainers' reaper image cannot be pulled here (no registry); tests clean up
# after themselves by label instead.
export TESTCONTAINERS_RYUK_DISABLED := true
# The tests run beside the engine (a /.dockerenv here makes testcontainers guess
# a gateway address instead): published ports are reached on localhost.
export TESTCONTAINERS_HOST_OVERRIDE ?= localhost

GO      ?= go
BIN     := bin/airlock
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
CMD     ?= echo "hello from airlock"; id; cat /etc/os-release 2>/dev/null || uname -a

PROBE   := bin/airlock-probe

# The integration tests that run again with the pool off: those whose runs go
# through the suite's pooled executor (ex), so that the pool on and off give the
# same answers. Tests on executors of their own (the egress clients', the crash
# recovery's) take the same path in both passes and run once.
POOL_OFF_TESTS := ^Test(BackgroundBadInput|BackgroundChildrenDieWithTheRun|BackgroundFiftyConcurrentJobs|BackgroundFollowDeliversEveryLineInOrder|BackgroundGetMonitorsARunningJob|BackgroundKill|BackgroundLogsPageExactly|BackgroundRefusedByPolicy|BackgroundStdin|BinaryOutputIsValidJSON|CallerCancelKillsTheRun|ChildOOMWhileMainExitsZero|ConcurrentRuns|EnvDoesNotLeakHostVariables|ExitCodes|ForkBombContained|Hostile|InitOOMScoreBelowTheCommand|InitReportCannotBeForged|InitSurvivesQueuedSignals|InitSurvivesSignalsToPID1|InstantBalloonsAllFlagged|JobFloodCountedExactly|JobKilledMidFloodIsMeasured|JobOutputWithoutAFinalNewline|JobSIGKILLUnderEachRuntime|JobShortUsageAndEarlyOOM|JobsAtOnceEachReport|MemoryBalloonIsOOMKilled|NetworkEgressFails|NoStdinEndsAtOnce|OutputCapsPerStreamAndTails|ResourceUsageMeasured|ResourceUsageOfAShortRun|ResultProvenance|RootfsIsReadOnly|RunsDoNotShareFiles|SIGTERMIgnoredIsKilledAfterGrace|SandboxControls|StderrSeparateFromStdout|StdinFedAndClosed|StdoutFloodIsCappedWithBoundedMemory|TimeoutKeepsPartialOutput|TmpfsFillGivesENOSPC)$$
# The packages whose tests drive the real engine. The executor's and the
# server's run beside the Python client's tests (each keeps to what it made);
# tcairlock and the integration suite, which count every airlock container on
# the engine, run after them, one at a time. Every other package (pure Go, or
# a PostgreSQL of its own) runs beside all of them, two at a time, with -race
# where goroutines meet (RACE_PKGS).
ENGINE_UNIT_PKGS  := ./executor/ ./server/
ENGINE_SUITE_PKGS := ./tcairlock/ ./integration/
RACE_PKGS   := ./cluster/... ./internal/egress/ ./internal/relay/ ./store/
TESTLOG     := bin/testlog
LISTEN  ?= 127.0.0.1:8080

# The server image (Dockerfile) packs bin/airlock and a copy of the host's static
# busybox (Debian's busybox-static); docker-compose.yml runs it.
BUSYBOX      ?= /bin/busybox
SERVER_IMAGE ?= airlock/server:local

.PHONY: help build images probe test test-python hostile runsc runc bench run demo lint tidy server-image compose-up

help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-z-]+:.*## /{printf "  make %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/airlock and bin/airlock-init (the sandboxes' PID 1, found beside it), static binaries
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/airlock
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/airlock-init ./cmd/airlock-init

probe: ## build bin/airlock-probe, the static in-sandbox probe of the kernel surface
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(PROBE) ./integration/probe

runsc: ## install gVisor (Debian's runsc) and register it with the engine (SIGHUP, no restart)
	.ci/install-runsc

runc: ## build a patched runc (Go module, libseccomp) and register it with the engine as airlock-runc, which runc sandboxes then use (SIGHUP, no restart)
	.ci/install-runc

hostile: images probe ## the hostile-workload battery alone, under runc and (when the engine has it) runsc
	$(GO) test -race -count=1 -run 'TestHostile' -timeout 30m ./integration/

server-image: build ## build the server image (FROM scratch: bin/airlock and bin/busybox), offline
	cp -L $(BUSYBOX) bin/busybox
	docker build --no-cache -t $(SERVER_IMAGE) .

compose-up: server-image ## run the server with docker-compose (set AIRLOCK_TOKEN; AIRLOCK_PORT, default 8080)
	docker-compose up -d --build

images: build ## build the sandbox images (minimal, debian), offline; each only when its recipe changed (installs busybox-static and debootstrap if missing)
	.ci/install-busybox
	.ci/install-debootstrap
	$(BIN) images build

test: images ## vet, then unit and integration tests against the real engine, under runc (the patched airlock-runc) and gVisor (and a throw-away PostgreSQL; airlock-runc, runsc and PostgreSQL installed if missing); fails on leaked containers; prints the 20 slowest tests
	.ci/install-runc
	.ci/install-runsc
	.ci/install-postgresql
	$(GO) vet ./...
	@set -o pipefail; rm -rf $(TESTLOG); mkdir -p $(TESTLOG); start=$$(date +%s); status=0; \
	pure=$$($(GO) list ./... | grep -v -E '/(executor|server|tcairlock|store|integration)$$|/integration/|/cluster(/|$$)|/internal/(egress|relay)$$'); \
	( $(GO) test -json -count=1 -p 2 -timeout 20m $$pure > $(TESTLOG)/beside.json; a=$$?; \
	  $(GO) test -json -race -count=1 -p 2 -timeout 20m $(RACE_PKGS) > $(TESTLOG)/beside-race.json; b=$$?; \
	  [ $$a -eq 0 ] && [ $$b -eq 0 ] ) & beside=$$!; \
	( $(GO) test -json -race -count=1 -p 1 -timeout 20m $(ENGINE_UNIT_PKGS) | tee $(TESTLOG)/engine-units.json | .ci/testsum ) & units=$$!; \
	( cd clients/python && AIRLOCK_BIN=$(CURDIR)/$(BIN) python3 -m tests ) > $(TESTLOG)/python.log 2>&1 & python=$$!; \
	wait $$units || status=1; \
	wait $$python || status=1; \
	tail -n 5 $(TESTLOG)/python.log; grep -q '^OK' $(TESTLOG)/python.log || cat $(TESTLOG)/python.log; \
	echo "engine units and the Python client done at $$(( $$(date +%s) - start )) s"; \
	$(GO) test -json -race -count=1 -p 1 -timeout 40m $(ENGINE_SUITE_PKGS) | tee $(TESTLOG)/engine.json | .ci/testsum || status=1; \
	echo "integration suite done at $$(( $$(date +%s) - start )) s"; \
	AIRLOCK_TEST_POOL=off $(GO) test -json -race -count=1 -timeout 30m -run '$(POOL_OFF_TESTS)' ./integration/ | tee $(TESTLOG)/pooloff.json | .ci/testsum || status=1; \
	echo "pool-off pass done at $$(( $$(date +%s) - start )) s"; \
	wait $$beside; \
	cat $(TESTLOG)/beside.json $(TESTLOG)/beside-race.json | .ci/testsum || status=1; \
	echo "all tests done in $$(( $$(date +%s) - start )) s; the 20 slowest:"; \
	.ci/testsum --slowest 20 $(TESTLOG)/*.json; \
	exit $$status
	@left=$$(docker ps -aq --filter label=io.airlock.managed=true); \
	if [ -n "$$left" ]; then echo "leaked containers: $$left"; exit 1; fi; \
	vols=$$(docker volume ls -q --filter label=io.airlock.managed=true); \
	if [ -n "$$vols" ]; then echo "leaked volumes: $$vols"; exit 1; fi; \
	echo "no airlock container left on the engine"

test-python: images ## the Python client's tests (clients/python, python3 and its standard library) against a real airlock serve they start
	cd clients/python && AIRLOCK_BIN=$(CURDIR)/$(BIN) python3 -m tests

bench: images ## policy check speed; the egress proxy; run latency and throughput against docker run --rm and the bare API; the warm pool; workspaces; network by allow-list
	$(GO) test -run '^$$' -bench . -benchmem ./policy/
	$(GO) test -run '^$$' -bench . -benchmem ./internal/egress/
	AIRLOCK_INIT=$(CURDIR)/bin/airlock-init $(GO) run ./integration/bench

run: build ## serve the HTTP API and MCP on 127.0.0.1:8080 (LISTEN=...), default data dir, as soon as airlock/minimal is built (airlock/debian is built in the background, its progress logged); Ctrl-C stops it
	.ci/install-busybox
	.ci/install-debootstrap
	$(BIN) images build minimal
	@echo "airlock: serving on http://$(LISTEN) (API under /v1, MCP on /mcp); from another terminal:"
	@echo "  curl -s -H 'Content-Type: application/json' -d '{\"command\":\"echo hi; id\"}' http://$(LISTEN)/v1/processes"
	@echo "  curl -s http://$(LISTEN)/openapi.json"
	$(BIN) serve --listen $(LISTEN)

demo: images ## run one command in a sandbox through the CLI (make demo CMD='ls -la /')
	$(BIN) run -- '$(CMD)'

lint: ## gofmt, go vet, and no compiled executable or file over 1 MB tracked
	.ci/check-tracked
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

tidy: ## go mod tidy
	$(GO) mod tidy
