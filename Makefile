# The README's two commands: `make run` and `make test`.
SWIFT ?= swift
PORT ?= 8080
SANDBOX ?= .sandbox
STORE ?= .data/orders.sqlite

.PHONY: setup build run test lint bench fuzz clean load crash attack

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

# Token verification + decryption against OpenSSL's own bound, measured in the same run (issue 3).
bench: setup
	scripts/bench-decrypt.sh

# Load test of the merchant server on 127.0.0.1: wrk on the API, concurrent sandbox payments and replays (scripts/load-test.sh).
load: setup
	scripts/load-test.sh

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
