# sluice: the commands a developer and CI run. `make test` is the one test
# command; it builds what the tests need first.

CARGO ?= cargo

.PHONY: all build run test lint fmt bench clean

all: build

build:
	$(CARGO) build --workspace

run:
	$(CARGO) run --release --bin sluice

test:
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
