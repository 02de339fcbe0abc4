# ticketd: make run | make test | make bench | make lint | make fuzz
GO       ?= go
BIN      := bin/ticketd
PKGS     := ./...
# Short fuzz runs in make test; longer ones in make fuzz.
# Fuzz budgets are execution counts, not durations: with a duration, Go
# 1.26's fuzz coordinator can report "context deadline exceeded" as a
# failure when the time is up while a worker is mid-run (golang/go#75804,
# fixed in Go 1.27), which failed a clean-clone CI run. A count has no
# deadline to race. 4000 runs take 0.2 to 5 s per target on 2 cores.
FUZZTIME ?= 4000x
FUZZTIME_LONG ?= 100000x

.PHONY: all build run test test-go fuzz-short fuzz bench bench-cluster chaos cluster-chaos chaos-deps lint lint-openapi lint-openapi-deps browser-deps ticket-deps readme-deps stripe-mock clean

all: build

# What `ticketd version` prints first; Go adds the commit itself only where
# it stamps VCS information (not under -buildvcs=false).
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null)
build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/ticketd

## run: build and start the service on the embedded Pebble store in ./data
run: build
	./$(BIN) serve

## test: every test (unit, simulation, crash, HTTP black-box, browser), plus short fuzz runs
test: browser-deps ticket-deps stripe-mock chaos-deps readme-deps test-go lint-openapi fuzz-short

# gotestsum prints a line per package as it finishes (the failures in full)
# and a closing count; it is fetched through the module proxy on first use.
GOTESTSUM := $(GO) run gotest.tools/gotestsum@v1.13.0

# The cluster packages' test binaries take turns through a machine-wide
# lock (internal/testlock: two 3-node clusters at once starve 2 cores). In
# one go test over ./... they came up side by side, one running while the
# next waited on the lock in go test's second slot, so the rest of the
# suite stood still for the whole chain (about 440 s of a 644 s run). Now
# two workers (xargs -P 2) run go test jobs, one package at a time each:
# the cluster packages are one job, started first, and every other package
# with tests is a job of its own, the slowest first, so two test processes
# run at all times and none waits on the lock. One gotestsum reads them all
# (go test -json writes each event line whole, under the 4 KiB a pipe
# keeps whole) and prints a line per package as it ends and one count.
TESTFLAGS := -count=1 -timeout 9m
# The packages whose tests took longest, slowest first, started first so
# that none is left running alone at the end (one at a time on the loaded
# machine, 2026-11-29: 157, 141, 137, 113, 92, 74 and 55 s; every other
# package 21 s or less).
SLOWTESTPKGS := ticketd/http/api ticketd/http/pages ticketd/http/console ticketd/cmd/ticketd ticketd/bench/faults ticketd/http/openapi ticketd/bench
TESTPKGS = $(shell $(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' $(PKGS))
CLUSTERTESTPKGS = $(filter ticketd/cluster ticketd/cluster/%,$(TESTPKGS))
OTHERTESTPKGS = $(filter-out ticketd/cluster ticketd/cluster/%,$(TESTPKGS))
TESTJOBS = $(if $(CLUSTERTESTPKGS),'$(CLUSTERTESTPKGS)') $(filter $(OTHERTESTPKGS),$(SLOWTESTPKGS)) $(filter-out $(SLOWTESTPKGS),$(OTHERTESTPKGS))

test-go:
	$(GO) vet $(PKGS)
	@echo "go test $(TESTFLAGS), two packages at a time: the cluster packages one after another beside the others"
	@$(GOTESTSUM) --format pkgname-and-test-fails --format-hide-empty-pkg --raw-command -- sh -c \
	  'printf "%s\n" "$$@" | xargs -P 2 -I{} sh -c "$(GO) test -json -p 1 $(TESTFLAGS) {}"' test-go $(TESTJOBS)

# Fuzz targets as package:Target pairs.
FUZZ_TARGETS := $(shell for f in $$(grep -rlE --include='*_test.go' '^func Fuzz' .); do \
	  for t in $$(grep -oE '^func Fuzz[A-Za-z0-9_]+' $$f | cut -d' ' -f2); do echo "$$(dirname $$f):$$t"; done; done)

fuzz-short:
	@set -e; for pt in $(FUZZ_TARGETS); do \
	  pkg=$${pt%%:*}; t=$${pt##*:}; echo "fuzz $$pkg $$t ($(FUZZTIME))"; \
	  $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg; done

fuzz:
	$(MAKE) fuzz-short FUZZTIME=$(FUZZTIME_LONG)

## bench: go test benchmarks of the core and the WAL, then the load generator
## (results in bench/results; BENCHFLAGS=-quick for a two-minute smoke run,
## `go run ./bench/cmd/loadgen -h` lists the knobs)
# A -quick run shortens the go benchmarks too and keeps its results out of
# the tracked bench/results (they go to bin/bench-results). Quick: -short
# drops the 1M-record sizes and shrinks the whole-scenario benchmarks, and a
# time (not a count: -benchtime=200x ran 200 replays of 1M changes) runs an
# iteration longer than it once. go test kills a package's run at -timeout
# plus a minute (its own -timeout alarm does not cover benchmarks).
ifneq (,$(findstring -quick,$(BENCHFLAGS)))
GOBENCHFLAGS ?= -short -benchtime=100ms -timeout 5m
LOADGENRESULTS := -results bin/bench-results
# The quick load run keeps the scenarios of the flash-sale and check-in
# ratios and the cheap correctness ones (about a minute); every scenario
# at the quick sizes takes about three: go run ./bench/cmd/loadgen -quick.
# A -only in BENCHFLAGS comes later and wins.
QUICKSCENARIOS ?= ceiling,flash-sale,sold-out,checkin-burst,kill9,recovery
LOADGENONLY := -only $(QUICKSCENARIOS)
else
GOBENCHFLAGS ?= -timeout 30m
endif
# Only the packages with benchmarks: linking every test binary of the tree
# took minutes on a loaded 2-core machine and ran nothing.
BENCHPKGS := $(sort $(dir $(shell grep -rlE --include='*_test.go' '^func Benchmark' .)))

bench:
	$(GO) test -run='^$$' -bench=. -benchmem $(GOBENCHFLAGS) $(BENCHPKGS)
	$(GO) run ./bench/cmd/loadgen $(LOADGENONLY) $(BENCHFLAGS) $(LOADGENRESULTS)

## chaos: the real binary, supervised, under an order flood with in turn kill -9,
## a full disk (tmpfs), an injected fsync EIO (strace), 3,000 idle connections and
## a refusing SMTP relay; about 2.5 minutes (CHAOSFLAGS=-quick: about 1.5); report in
## bench/results/chaos-*.md (a -quick run's under bin/bench-results); then
## cluster-chaos (below, about 10 minutes more)
ifneq (,$(findstring -quick,$(CHAOSFLAGS)))
CHAOSRESULTS := -results bin/bench-results
endif

chaos: chaos-deps build
	$(GO) run ./bench/cmd/chaos -ticketd $(BIN) $(CHAOSFLAGS) $(CHAOSRESULTS)
	$(MAKE) cluster-chaos

## bench-cluster: the cluster's throughput (a hot-event flash sale and a 64-event drop
## on 3 in-process nodes, each as a ratio to one Pebble node measured in the same run:
## 5 runs, the median reported)
## then cluster-chaos for the failover gap; the output in bin/bench-results/cluster-*.txt
bench-cluster:
	@mkdir -p bin/bench-results
	bash -o pipefail -c 'TICKETD_CLUSTER_BENCH=1 $(GO) test -count=5 -v -timeout 20m -run TestThroughputRatios ./cluster/routing/ 2>&1 | tee bin/bench-results/cluster-$$(date -u +%Y%m%d-%H%M%S).txt'
	$(MAKE) cluster-chaos

## cluster-chaos: three real nodes in cluster mode under an order load, with in turn
## kill -9 of the hot event's owner, SIGSTOP of its owner for 15 s, a node restarted
## on an empty data dir and a rolling restart; every acknowledged order must survive,
## writes resume within 15 s of a kill -9 and pause under 1 s for a planned move; then
## a new cluster (first order and longest gap under 1 s), a rolling restart of a
## 3-event drop, and keyed writes under kill -9 applied exactly once (about 12 minutes)
cluster-chaos:
	TICKETD_CLUSTER_CHAOS=1 $(GO) test -count=1 -v -timeout 40m -run 'TestCluster(Chaos|Fresh|RollingRestart|KeyedWritesExactlyOnce)$$' ./cluster/chaos/

# The fsync fault (make chaos, and bench/faults in make test) runs the
# service under strace; install it when missing.
chaos-deps:
	@if ! command -v strace >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing strace (chaos fsync fault)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null; \
	  else echo "strace is missing: the chaos run skips its fsync fault"; fi; \
	fi

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet $(PKGS)
	@# Dependency direction: the pure cores import nothing of the module and no I/O.
	@! $(GO) list -deps ./event ./directory | grep -E '^ticketd/(actors|http|persistence|snapshots)$$' 
	@! $(GO) list -f '{{join .Imports "\n"}}' ./event ./directory | grep -E '^(os|net|net/http|ticketd/.*)$$'
	@! $(GO) list -deps ./persistence ./snapshots | grep -E '^ticketd/(http|actors)$$'
	@! $(GO) list -deps ./actors/... | grep -E '^ticketd/http$$'
	@# The pipeline knows no endpoint; the handler packages sit above it,
	@# decoding and storage below it; only cmd and bench run the wiring (app).
	@! $(GO) list -deps ./http | grep -E '^ticketd/(app|http/api|http/pages|http/openapi)$$'
	@! $(GO) list -deps ./http/bind | grep -E '^ticketd/(app|http|http/(api|pages|openapi))$$'
	@! $(GO) list -deps ./audit ./payments ./internal/... | grep -E '^ticketd/(app|http|http/.*)$$'
	@! $(GO) list -deps ./http/openapi ./http/pages | grep -E '^ticketd/(app|http/api)$$'
	@! $(GO) list -deps ./http/... ./actors/... ./audit ./payments | grep -E '^ticketd/app$$'

## lint-openapi: the served OpenAPI documents through Spectral (spectral:oas)
## and Redocly (recommended); any error or warning fails
# Both linters are npm packages, installed into bin/lint (git-ignored) when
# missing, pinned to the versions current on 2026-11-25.
SPECTRAL_VERSION := 6.16.3
REDOCLY_VERSION  := 2.77.0
LINTBIN := bin/lint/node_modules/.bin
lint-openapi-deps:
	@if [ ! -x $(LINTBIN)/spectral ] || [ ! -x $(LINTBIN)/redocly ]; then \
	  if ! command -v npm >/dev/null 2>&1; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      echo "installing npm (lint-openapi)"; \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; \
	    else echo "npm is missing: install Node.js and npm to lint the OpenAPI documents"; exit 1; fi; \
	  fi; \
	  echo "installing spectral and redocly into bin/lint (lint-openapi)"; \
	  npm install --prefix bin/lint --no-audit --no-fund --loglevel=error \
	    @stoplight/spectral-cli@$(SPECTRAL_VERSION) @redocly/cli@$(REDOCLY_VERSION) >/dev/null; \
	fi

# One spectral and one redocly run over the four documents: a run per
# document started Node.js eight times (about 10 s each on the loaded
# 2-core machine, most of it start-up). Each linter names the document of
# every problem it reports; redocly's closing line counts the warnings of
# them all.
OPENAPIDOCS := $(foreach f,developer storefront admin door,bin/openapi/$(f).json)
lint-openapi: lint-openapi-deps
	$(GO) run ./cmd/openapi-dump -out bin/openapi
	@echo "lint-openapi: $(OPENAPIDOCS) (spectral)"
	@$(LINTBIN)/spectral lint --quiet --fail-severity=warn -r http/openapi/lint/spectral.yaml $(OPENAPIDOCS)
	@echo "lint-openapi: $(OPENAPIDOCS) (redocly)"
	@out=$$(REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(LINTBIN)/redocly lint --config http/openapi/lint/redocly.yaml $(OPENAPIDOCS) 2>&1) \
	  || { echo "$$out"; exit 1; }; \
	if echo "$$out" | grep -qE 'You have [0-9]+ warning'; then echo "$$out"; exit 1; fi; \
	echo "lint-openapi: 0 errors, 0 warnings"

# The browser tests drive Debian's chromium; install it when missing.
browser-deps:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (browser tests)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing: install Debian's chromium package to run the browser tests"; exit 1; fi; \
	fi

# The buyer's ticket tests read the PDF back (poppler-utils: pdftotext,
# pdftoppm, pdfinfo), decode its QR code (zbar-tools: zbarimg) and verify
# the Apple Wallet pass's signature (openssl).
ticket-deps:
	@missing=""; \
	command -v pdftotext >/dev/null 2>&1 || missing="$$missing poppler-utils"; \
	command -v zbarimg >/dev/null 2>&1 || missing="$$missing zbar-tools"; \
	command -v openssl >/dev/null 2>&1 || missing="$$missing openssl"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing$$missing (ticket PDF and wallet tests)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing$$missing: install these Debian packages to run the ticket tests"; exit 1; fi; \
	fi

# The README's walk-through (run by cmd/ticketd's TestReadmeTryItRuns)
# uses curl and jq; install jq when missing.
readme-deps:
	@if ! command -v jq >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing jq (README walk-through)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; \
	  else echo "jq is missing: the README walk-through test skips"; fi; \
	fi

# The Stripe provider's tests call Stripe's own mock API server; install it
# into $(go env GOPATH)/bin when missing (the tests look there and on PATH);
# pinned to the version @latest built here on 2026-11-25.
stripe-mock:
	@if ! command -v stripe-mock >/dev/null 2>&1 && [ ! -x "$$($(GO) env GOPATH | cut -d: -f1)/bin/stripe-mock" ]; then \
	  echo "installing stripe-mock (payments/stripe tests)"; \
	  $(GO) install github.com/stripe/stripe-mock@v0.203.0; \
	fi

clean:
	rm -rf bin
