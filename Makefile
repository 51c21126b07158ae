# The README's two commands: `make run` and `make test`.
SWIFT ?= swift
PORT ?= 8080
SANDBOX ?= .sandbox
STORE ?= .data/orders.sqlite

.PHONY: setup build run test lint bench fuzz clean load soak crash attack

setup:
	@scripts/setup.sh

build: setup
	$(SWIFT) build -c release

# The main job: the merchant server in sandbox mode on an embedded SQLite store.
run: build
	@scripts/run.sh "$(SANDBOX)" "$(STORE)" "$(PORT)"

# Lint first (the repository's .swift-format, strict: a warning fails the run), then build and run every test.
# The tests run against a private PostgreSQL cluster (a temporary folder, Unix socket only) that
# scripts/test-postgres.sh starts before and stops after, also when a test fails; APPLEPAY_REQUIRE_POSTGRES makes
# the PostgreSQL tests fail, not skip, if it is missing.
test: setup lint
	$(SWIFT) build --build-tests
	APPLEPAY_REQUIRE_POSTGRES=1 scripts/test-postgres.sh run $(SWIFT) test --skip-build

lint:
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests Examples

# One measured run of everything, written into docs/PERFORMANCE.md's tables (scripts/bench.sh): token
# verification + decryption against OpenSSL's own bound (EC_v1, RSA_v1), the load test on SQLite (profiled with perf)
# and on PostgreSQL, and a SOAK_MINUTES soak (0: none).
SOAK_MINUTES ?= 10
bench: setup
	SOAK_MINUTES=$(SOAK_MINUTES) scripts/bench.sh

# Load test of the merchant server on 127.0.0.1: wrk on the API, pre-minted sandbox payments and replays posted
# once each by wrk (scripts/load-test.sh; STORE=postgres for a private PostgreSQL cluster).
load: setup
	scripts/load-test.sh

# Mixed traffic for SOAK_MINUTES with the server's memory and descriptors sampled every 10 s (scripts/soak-test.sh).
soak: setup
	scripts/soak-test.sh $(SOAK_MINUTES)

# Crash test: payments under SIGKILLs of the merchant server and the processor service, then store vs ledger
# (scripts/crash-test.sh [PAYMENTS] [SERVER_KILLS] [PROCESSOR_KILLS]; a short form runs in `make test`).
crash: setup
	scripts/crash-test.sh

# libFuzzer on the token path for FUZZ_SECONDS (scripts/fuzz-token.sh; findings in .build-fuzz/findings).
FUZZ_SECONDS ?= 120
# Then the merchant side's targets (scripts/fuzz-merchant.sh: payment request, store configuration, HTTP handling),
# FUZZ_SECONDS each; `make test` replays their corpora (Tests/Fixtures/fuzz-merchant).
fuzz: setup
	scripts/fuzz-token.sh "$(FUZZ_SECONDS)"
	scripts/fuzz-merchant.sh "$(FUZZ_SECONDS)"

# The merchant server under abuse on loopback (scripts/attack.sh): slow-loris, invented methods, a checkout flood,
# oversized fields, a cross-site POST; prints the figures. `make test` runs a short form.
attack: setup
	scripts/attack.sh

clean:
	rm -rf .build
