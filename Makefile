# Stencil — everyday commands. `make run` and `make test` set up everything
# they need on a fresh Debian machine.
SHELL := /bin/bash
GO ?= go
STATICCHECK := $(CURDIR)/.cache/bin/staticcheck
OAPI_CODEGEN := $(GO) run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2
# Go packages of this module; node_modules may ship Go files of its own (and
# may be half-installed while prebuild lists the packages).
PKGS = $$($(GO) list -e ./... 2>/dev/null | grep -v /node_modules/)

.PHONY: lighthouse run build peer test go-checks prebuild tools check-format vet staticcheck lint-js test-js api-check unit bench bench-scale fuzz assets assets-check deps-system deps-node clean

run: deps-pg
	$(GO) run . serve

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/stencil .

# The peer make bench measures Stencil beside (docs/performance.md, "The
# peer"): PocketBase, a module of its own that needs Go 1.27, which the go
# command takes from the module proxy.
peer:
	cd loadbench/peer && GOTOOLCHAIN=go1.27.3 CGO_ENABLED=0 $(GO) build -trimpath -o ../../bin/peer .

## test: every check CI runs. Installs PostgreSQL and Chromium when missing.
## First, side by side: the system's and npm's packages install (mostly
## waits on the network and the disk) while the Go code is compiled
## (prebuild). Then the tests start, and vet, staticcheck and the JavaScript
## and API checks run beside them, in the time the browser journeys' waits
## leave free (docs/testing.md).
test:
	@$(MAKE) --no-print-directory -j3 --output-sync=target deps-system deps-node check-format prebuild tools
	@$(MAKE) --no-print-directory -j4 --output-sync=target unit vet staticcheck lint-js test-js assets-check api-check

go-checks: check-format vet staticcheck

## prebuild: every module downloaded, every test binary built with the race
## detector, run by nothing (-exec true), and the service built as the
## journeys build it (without): what `unit` then runs is in the build cache.
## vet and staticcheck read the race detector's build too (-race), so the
## code is compiled twice, not three times.
prebuild:
	@$(GO) mod download && (cd .ci/apiclient && $(GO) mod download)
	@$(GO) test -race -count=1 -run '^$$' -exec true $(PKGS) >/dev/null
	@$(GO) build -o /dev/null .

## tools: staticcheck, and oapi-codegen for the route client's test, built
## into .cache/bin while the registries can be reached (the tests run with
## loopback only).
tools:
	@GOBIN=$(CURDIR)/.cache/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	@GOBIN=$(CURDIR)/.cache/bin $(GO) install github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2

## unit: the Go tests, after every module they need is downloaded, in a
## network namespace with loopback only (.ci/loopback-only, docs/testing.md);
## three packages at once, as one of them is often waiting (mail's server
## down for a minute, the private clusters' starts).
unit: deps-system deps-node tools
	@$(GO) mod download && (cd .ci/apiclient && $(GO) mod download)
	@.ci/loopback-only ip -brief addr
	OAPI_CODEGEN_BIN=$(CURDIR)/.cache/bin/oapi-codegen .ci/loopback-only $(GO) test -race -count=1 -p 3 -timeout 20m $(PKGS)

## bench: Go benchmarks, then the load harness: the service on a private
## cluster, loaded by wrk, beside pgbench running the same SQL (about 6
## minutes; installs wrk from Debian's packages when missing).
bench: deps-pg build peer
	@command -v wrk >/dev/null || $(call apt_install,wrk)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	$(GO) run ./loadbench -bin bin/stencil

## bench-scale: each hot path at 1×, 10× and 100× its data (10 to 10,000
## routes, 10,000 to 1,000,000 records, 100,000 to 10,000,000 runs and
## events …), seeded in SQL and loaded by wrk over 16 connections, then the
## retention sweep of the largest logs under load, retention's cost at days
## of 1,000,000 and 100,000,000 runs, and /x loaded for ten minutes against
## the run log; writes the table and the charts into docs/performance.md
## (about an hour, 30 GB of disk at its peak).
bench-scale: deps-pg build
	@command -v wrk >/dev/null || $(call apt_install,wrk)
	$(GO) run ./loadbench -bin bin/stencil -scale

## fuzz: each fuzz test for FUZZTIME (default 1m) beyond its seeds, which
## `make test` runs: the engine's JSON decoder and random routes' runs.
FUZZTIME ?= 1m
fuzz:
	$(GO) test ./engine -run '^$$' -fuzz '^FuzzDecoder$$' -fuzztime $(FUZZTIME)
	$(GO) test ./engine -run '^$$' -fuzz '^FuzzRun$$' -fuzztime $(FUZZTIME)

## lighthouse: Lighthouse's mobile scores of the sign-in, home, project, vault, template
## list, editors, playground, records, run log, analytics and apply pages, on the seeded
## service (installs the pinned Lighthouse under .cache/ on first use; about
## 4 minutes).
LIGHTHOUSE_VERSION := 12.8.2
lighthouse: deps-pg deps-system build
	@test -x .cache/lighthouse/node_modules/.bin/lighthouse || npm install --silent --no-audit --no-fund --prefix .cache/lighthouse lighthouse@$(LIGHTHOUSE_VERSION)
	$(GO) run ./loadbench -bin bin/stencil -lighthouse .cache/lighthouse/node_modules/.bin/lighthouse

check-format:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet -race $(PKGS)

staticcheck: tools
	GOFLAGS=-race $(STATICCHECK) $(PKGS)

## lint-js: ESLint with the committed config (eslint.config.mjs) over the
## pages' scripts and the repository's other JavaScript.
lint-js: deps-node
	npx --no-install eslint --max-warnings 0 .

## test-js: the unit tests of the pages' scripts (static/src/js/test), by
## Node's own test runner.
test-js:
	node --test --test-reporter=dot static/src/js/test/

## The pages' scripts: one bundle per page (static/src/js/*.js, each with
## the modules it imports from lib/, editor/ and grid/), built by esbuild.
JS_ENTRIES = $(wildcard static/src/js/*.js)
JS_BUILD = npx --no-install esbuild $(JS_ENTRIES) --bundle --format=iife --minify --target=es2019 --log-level=warning

## api-check: the served API document passes Spectral's oas ruleset with no
## error, and clients generated from it with default flags work for a
## program that creates a record and saves a route with a query parameter:
## Go (oapi-codegen, with .ci/apiclient/use.go) compiles, and TypeScript
## (openapi-typescript and openapi-fetch, .ci/apiclient/use.ts) type-checks.
api-check: deps-node
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; set -e; \
	$(GO) run -race . openapi > $$tmp/openapi.json; \
	npx --no-install spectral lint --quiet --ruleset .spectral.yaml --fail-severity error $$tmp/openapi.json; \
	mkdir $$tmp/client; cp .ci/apiclient/go.mod .ci/apiclient/go.sum .ci/apiclient/use.go $$tmp/client/; \
	$(OAPI_CODEGEN) -config .ci/apiclient/oapi-codegen.yaml -o $$tmp/client/client.gen.go $$tmp/openapi.json; \
	(cd $$tmp/client && $(GO) vet ./...); \
	mkdir $$tmp/ts; cp .ci/apiclient/use.ts $$tmp/ts/; ln -s $(CURDIR)/node_modules $$tmp/ts/node_modules; \
	npx --no-install openapi-typescript $$tmp/openapi.json -o $$tmp/ts/schema.d.ts --silent; \
	npx --no-install tsc --noEmit --strict --target es2022 --module esnext --moduleResolution bundler --skipLibCheck $$tmp/ts/use.ts; \
	echo "API document: no Spectral errors; the generated Go client compiles and the TypeScript client type-checks, each creating a record and saving a route"

## assets: rebuild the committed CSS and vendored scripts from package.json's pins.
assets: deps-node
	npm run --silent build:css
	$(JS_BUILD) --outdir=static/js
	cp node_modules/htmx.org/dist/htmx.min.js static/vendor/htmx.min.js
	mkdir -p static/vendor/scalar static/vendor/uplot
	node static/src/vendor-scalar.js static/vendor/scalar/standalone.js
	cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css static/vendor/uplot/

## assets-check: fail when the committed static files differ from a fresh build.
assets-check: deps-node
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	npx --no-install tailwindcss -c tailwind.config.js -i static/src/app.css -o $$tmp/app.css --minify 2>/dev/null; \
	cmp -s $$tmp/app.css static/css/app.css || { echo "static/css/app.css is stale: run 'make assets' and commit"; exit 1; }; \
	$(JS_BUILD) --outdir=$$tmp/js; \
	for f in $$tmp/js/*.js; do cmp -s $$f static/js/$$(basename $$f) || { echo "static/js/$$(basename $$f) is stale: run 'make assets' and commit"; exit 1; }; done; \
	for f in static/js/*.js; do [ -f $$tmp/js/$$(basename $$f) ] || { echo "$$f has no source in static/src/js: remove it"; exit 1; }; done; \
	cmp -s node_modules/htmx.org/dist/htmx.min.js static/vendor/htmx.min.js || { echo "static/vendor/htmx.min.js differs from package.json's pin: run 'make assets'"; exit 1; }; \
	for f in uPlot.iife.min.js uPlot.min.css; do cmp -s node_modules/uplot/dist/$$f static/vendor/uplot/$$f || { echo "static/vendor/uplot/$$f differs from package.json's pin: run 'make assets'"; exit 1; }; done; \
	node static/src/vendor-scalar.js $$tmp/scalar.js; \
	cmp -s $$tmp/scalar.js static/vendor/scalar/standalone.js || { echo "static/vendor/scalar differs from package.json's pin: run 'make assets'"; exit 1; }; \
	echo "assets up to date"

deps-node:
	@[ -d node_modules/tailwindcss ] && [ -d node_modules/htmx.org ] && [ -d node_modules/@scalar/api-reference ] && [ -d node_modules/@stoplight/spectral-cli ] && [ -d node_modules/axe-core ] && [ -d node_modules/uplot ] && \
	  [ -d node_modules/openapi-typescript ] && [ -d node_modules/openapi-fetch ] && [ -d node_modules/typescript ] && [ -d node_modules/eslint ] && [ -d node_modules/@eslint/js ] && [ -d node_modules/globals ] || npm ci --no-audit --no-fund

## deps-system: Debian's PostgreSQL server and Chromium, installed when missing.
deps-system: deps-pg
	@command -v chromium >/dev/null || $(call apt_install,chromium)

deps-pg:
	@command -v postgres >/dev/null || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || $(call apt_install,postgresql)

define apt_install
	{ echo "installing $(1) from Debian's packages"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(1) >/dev/null; }
endef

clean:
	rm -rf bin artifacts
