# agentic — build, test, demo, bench.
GO      ?= go
BIN     ?= bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/agentic-dev/agentic/node.Version=$(VERSION)

.PHONY: all build build-nats test test-short mcp demo demo-cluster bench screenshots lint clean

all: build

## build: compile agentd and agentctl into ./bin (static: no cgo, so Pebble's
## caches live in Go memory and go back to the OS when freed)
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/agentd ./cmd/agentd
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS) -X main.version=$(VERSION)" -o $(BIN)/agentctl ./cmd/agentctl

## build-nats: nats-server into ./bin, built from the version agentd embeds
build-nats:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/nats-server github.com/nats-io/nats-server/v2

## test: formatting, vet, and the whole suite with the race detector (what CI runs)
test: lint mcp
	$(GO) test -race -timeout 30m ./...

## mcp: the reference MCP filesystem server the plugin tests run, installed
## from its lockfile into testdata/mcp/node_modules (needs npm)
mcp: testdata/mcp/node_modules/.package-lock.json

testdata/mcp/node_modules/.package-lock.json: testdata/mcp/package-lock.json
	cd testdata/mcp && npm ci --ignore-scripts --no-audit --no-fund

## test-short: skip the slow multi-process tests
test-short:
	$(GO) test -short ./...

## demo: a single-node cluster in a temp dir runs examples/hello.yaml end to end
demo: build
	BIN=$(BIN) ./deploy/demo.sh

## demo-cluster: three NATS servers and three agentd on this machine; an
## executor is killed mid-step and the run finishes on the other
demo-cluster: build build-nats
	BIN=$(BIN) ./deploy/demo-cluster.sh

## bench: throughput and latency figures (see README, Performance)
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./node/bench/
	$(GO) test -run '^$$' -bench BenchmarkJudge -cpu 1 ./roles/policy
	$(GO) test -run '^$$' -bench BenchmarkRedactEvent ./bus/redact
	$(GO) test -run '^$$' -bench BenchmarkPlanOverhead -benchtime 20x ./roles/planner/llm
	$(GO) test -run '^$$' -bench BenchmarkCall -benchtime 3000x ./node/api
	$(GO) test -run '^$$' -bench 'BenchmarkLayout5000|BenchmarkCollapse5000' ./roles/ui/layout
	$(GO) test -run '^$$' -bench 'BenchmarkRunPage|BenchmarkBrowserRunPage' -benchtime 5x ./roles/ui/web
	$(GO) test -run '^$$' -bench BenchmarkToolCallOverhead -benchtime 200x ./roles/executor/pluginhost
	$(GO) test -run '^$$' -bench BenchmarkToolStepOverhead -benchtime 100x ./roles/executor
	$(GO) test -run '^$$' -bench BenchmarkSearch100k -benchtime 200x ./roles/memory
	$(GO) test -run '^$$' -bench BenchmarkExport1M -benchtime 1x ./ledger/telemetry
	$(GO) test -run '^$$' -bench 'BenchmarkEvalPass(Ledger)?500k' -benchtime 1x ./roles/improve
	$(GO) test -run '^$$' -bench BenchmarkThroughput -benchtime 3x ./bus/artifact

## screenshots: the dashboard's run page and gate inbox, drawn by the browser
## test in Debian's chromium, into docs/images (linked from the README)
screenshots:
	$(GO) test -count=1 -run TestBrowserScreenshots ./roles/ui/web -screenshots

## lint: formatting and vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
