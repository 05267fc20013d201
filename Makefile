# sluice: the commands a developer and CI run. `make test` is the one test
# command; it builds what the tests need first.

CARGO ?= cargo

PYTHON ?= python3
VENV := .venv
CLIENTS := tests/clients

.PHONY: all build run test test-installs test-builds check lint fmt bench fuzz soak deny clean clients template vendor first-run hops

all: build

build:
	$(CARGO) build --workspace

run:
	$(CARGO) run --profile fast -p sluice-local

# What the end-to-end tests drive and talk to: the official MCP clients (the
# Python SDK in a venv, with FastMCP's client; the SDKs of protocol
# 2025-03-26, Python in a venv of its own and TypeScript under an npm alias;
# the current TypeScript SDK from the lock file), Claude Code, Codex, Gemini
# CLI, the MCP Inspector and mcp-remote (from the lock file) and tmux, clamd, cargo-lambda (in the venv), dynalite
# (DynamoDB, from the same lock file: its conditional writes are atomic),
# oidc-provider, playwright-core with Debian's Chromium (the upload page),
# the MCP Apps host bridge and esbuild (the widget's test host),
# and s3s-fs (S3, which verifies presigned signatures and checksums).
S3S_FS_VERSION := 0.14.1
S3S_FS := $(or $(CARGO_HOME),$(HOME)/.cargo)/bin/s3s-fs

clients: $(VENV)/.installed $(VENV)-legacy/.installed $(CLIENTS)/node_modules/.installed $(S3S_FS) /usr/bin/chromium /usr/bin/tmux /usr/sbin/clamd /usr/bin/unzip

# The Debian packages the tests run, in one apt-get (two must not run at
# once), as root (CI runs as root): Chromium, which the page tests drive
# (playwright-core cannot download its own here); tmux, which gives Claude
# Code's `mcp login` a terminal; and clamd, which the scanning tests and the
# scan benchmark start, each on a socket of its own with a signature
# database the test writes (sluice_testkit::clamd; no real database is
# downloaded); and unzip, whose `unzip -t` checks the zips of many files.
/usr/bin/chromium /usr/bin/tmux /usr/sbin/clamd /usr/bin/unzip &:
	DEBIAN_FRONTEND=noninteractive apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium tmux unzip
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends clamav-daemon

# The browser's vendored scripts (shared/src/web/: @noble/hashes' and
# hash-wasm's SHA-256, tus-js-client), each its pinned release bundled by
# the pinned esbuild (package-lock.json). The tests check each committed
# file is this build.
vendor: $(CLIENTS)/node_modules/.installed
	cd $(CLIENTS) && node vendor.mjs

/usr/bin/shellcheck:
	DEBIAN_FRONTEND=noninteractive apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q shellcheck

# The quick loop while editing: formatting, the library's and the functions'
# checks and unit tests, no emulator, browser or client.
check:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy -p sluice -p sluice-mcp -p sluice-issuer -p sluice-resolver --all-targets -- -D warnings
	$(CARGO) test -p sluice --features local
	$(CARGO) test -p sluice-mcp -p sluice-issuer -p sluice-resolver

$(VENV)/.installed: tests/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
	touch $@

# The Python SDK of protocol 2025-03-26, for the older clients' test.
$(VENV)-legacy/.installed: tests/requirements-legacy.txt
	$(PYTHON) -m venv $(VENV)-legacy
	$(VENV)-legacy/bin/pip install --quiet --disable-pip-version-check -r tests/requirements-legacy.txt
	touch $@

$(S3S_FS):
	$(CARGO) install s3s-fs@$(S3S_FS_VERSION) --features binary --locked

$(CLIENTS)/node_modules/.installed: $(CLIENTS)/package.json $(CLIENTS)/package-lock.json
	cd $(CLIENTS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# One test build: every crate's tests, the function crates' among them, in
# one run. What the function binaries leave out (the local backends) and the
# local binary's default build (the AWS ones) is a value each build reports
# (`sluice_runtime::Built`), tested for every build here; `make lint`
# checks each of those builds compiles, clippy-clean. The binaries `cargo
# lambda watch` and the deployed tests run are built as it builds them
# (`cargo run --bin <function>`): the functions alone, without `local`.
# The builds run while the clients install (the builds wait on the CPU, the
# installs mostly on the network), the installs side by side; a cold `make
# test` then runs no compiler while the tests run. The tests run four at a
# time on two cores: most of an end-to-end test's time is waiting on the
# processes it drives (256 s for the end-to-end binary, against 350 s two at
# a time; BENCHMARKS.md, "The test house").
TEST_THREADS ?= 4
test:
	$(MAKE) --no-print-directory -j2 test-installs test-builds
	$(CARGO) test --workspace -- --test-threads $(TEST_THREADS)

test-installs:
	$(MAKE) --no-print-directory -j4 clients

# The test build; the functions as `cargo lambda watch` builds them, and in
# the same build (the workspace's features, so nothing twice) the emulators'
# provisioning as `infra/dev-emulators.sh` runs it.
test-builds:
	$(CARGO) test --workspace --no-run
	$(CARGO) build --bin sluice-mcp --bin sluice-issuer --bin sluice-resolver --bin sluice-events --bin sluice-importer --bin sluice-provision

# The second and third clippy check the functions as `sam build` builds
# them: without the `local` feature the rest of the workspace turns on, and
# all but the importer without the zip writer (`zips`).
# The shell programs sluice runs or hands out: the scripts and the line
# templates under shared/src/sh/ (what the returned lines run), the dev emulators,
# CI's entry point.
SHELL_SCRIPTS := $(wildcard shared/src/sh/*.sh shared/src/sh/lines/*.sh) infra/dev-emulators.sh .ci/run bench/first-run.sh

lint: /usr/bin/shellcheck
	shellcheck $(SHELL_SCRIPTS)
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p sluice-mcp -p sluice-issuer -p sluice-resolver -p sluice-events --all-targets -- -D warnings
	$(CARGO) clippy -p sluice-importer --all-targets -- -D warnings
	$(CARGO) clippy -p sluice-local -p sluice-runtime --no-default-features --features sluice-runtime/local --all-targets -- -D warnings

# The SAM template, checked offline by cfn-lint, `sam validate --lint`, and
# infra/check-template.py on the SAM translator's output.
# aws-sam-cli pins its own versions of shared packages: it gets a venv of its own.
SAM_VENV := .venv-sam
SAM_OFFLINE := AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=offline AWS_SECRET_ACCESS_KEY=offline \
	AWS_EC2_METADATA_DISABLED=true SAM_CLI_TELEMETRY=0

$(SAM_VENV)/.installed:
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --disable-pip-version-check aws-sam-cli cfn-lint
	touch $@

template: $(SAM_VENV)/.installed
	$(SAM_OFFLINE) $(SAM_VENV)/bin/cfn-lint template.yaml
	$(SAM_OFFLINE) $(SAM_VENV)/bin/sam validate --lint --template template.yaml
	$(SAM_OFFLINE) $(SAM_VENV)/bin/python infra/check-template.py

fmt:
	$(CARGO) fmt --all

# The local server and the bench in the `fast` profile (how the local server
# is run); the functions in `release` (what `sam build` ships).
# The peer of the upload comparison (bench/peer/): mcp-upload 1.1.2 on
# uvicorn with httptools and uvloop, in a venv of its own.
.venv-peer/.installed: bench/peer/requirements.txt
	$(PYTHON) -m venv .venv-peer
	.venv-peer/bin/pip install --quiet --disable-pip-version-check -r bench/peer/requirements.txt
	touch $@

# A newcomer's first run, timed on a fresh clone (BENCHMARKS.md, "A first run").
first-run:
	bench/first-run.sh

bench: clients .venv-peer/.installed
	$(CARGO) build --profile fast --bin sluice --bin sluice-bench
	$(CARGO) build --release -p sluice-mcp -p sluice-issuer -p sluice-resolver
	target/fast/sluice-bench --out BENCHMARKS.md

# The local server under mixed well-formed and hostile load for SOAK_SECS
# (default 10 minutes), on loopback; fails on any 5xx to a well-formed
# request or any transfer that is not byte-exact, and writes the RSS and
# open-fd figures into BENCHMARKS.md's "Soak" section.
SOAK_SECS ?= 600
soak:
	$(CARGO) build --profile fast --bin sluice --bin sluice-bench
	target/fast/sluice-bench --soak $(SOAK_SECS) --out BENCHMARKS.md

# The codecs' property tests (shared/src/props.rs) with a million cases
# each; `make test` runs them with 256. Figures in BENCHMARKS.md.
FUZZ_CASES ?= 1000000
fuzz:
	PROPTEST_CASES=$(FUZZ_CASES) $(CARGO) test --profile fuzz -p sluice --features local props:: -- --skip real_shell --test-threads 2

# Licences and banned crates (deny.toml), with a pinned cargo-deny.
CARGO_DENY_VERSION := 0.20.2
CARGO_DENY := $(or $(CARGO_HOME),$(HOME)/.cargo)/bin/cargo-deny

$(CARGO_DENY):
	$(CARGO) install cargo-deny@$(CARGO_DENY_VERSION) --locked
	touch $@

# Each flow's path through the service, counted from the source (the table
# in docs/ARCHITECTURE.md, "The service's components"); pass TREES=<dirs>
# to compare checkouts.
hops:
	$(PYTHON) docs/flow-hops.py $(TREES)

deny: $(CARGO_DENY)
	$(CARGO_DENY) check licenses bans

clean:
	$(CARGO) clean
