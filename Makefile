# The README's two commands: `make run` and `make test`.
SWIFT ?= swift
PORT ?= 8080
SANDBOX ?= .sandbox
STORE ?= .data/orders.sqlite

.PHONY: setup build run test lint bench fuzz clean load attack

setup:
	@scripts/setup.sh

build: setup
	$(SWIFT) build -c release

# The main job: the merchant server in sandbox mode on an embedded SQLite store.
run: build
	@scripts/run.sh "$(SANDBOX)" "$(STORE)" "$(PORT)"

# Lint first (the repository's .swift-format, strict: a warning fails the run), then build and run every test.
test: setup lint
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

lint:
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests Examples

# Token verification + decryption against OpenSSL's own bound, measured in the same run (issue 3).
bench: setup
	scripts/bench-decrypt.sh

# Load test of the merchant server on 127.0.0.1: wrk on the API, concurrent sandbox payments and replays (scripts/load-test.sh).
load: setup
	scripts/load-test.sh

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
