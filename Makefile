# sluice: the commands a developer and CI run. `make test` is the one test
# command; it builds what the tests need first.

CARGO ?= cargo

PYTHON ?= python3
VENV := .venv
CLIENTS := tests/clients

.PHONY: all build run test lint fmt bench clean clients

all: build

build:
	$(CARGO) build --workspace

run:
	$(CARGO) run --release --bin sluice

# The official MCP clients the end-to-end tests drive: the Python SDK in a
# venv, the TypeScript SDK from the lock file.
clients: $(VENV)/.installed $(CLIENTS)/node_modules/.installed

$(VENV)/.installed: $(CLIENTS)/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r $(CLIENTS)/requirements.txt
	touch $@

$(CLIENTS)/node_modules/.installed: $(CLIENTS)/package.json $(CLIENTS)/package-lock.json
	cd $(CLIENTS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

test: clients
	$(CARGO) test --workspace

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

bench:
	$(CARGO) build --release --bin sluice --bin sluice-bench
	target/release/sluice-bench --out BENCHMARKS.md

clean:
	$(CARGO) clean
