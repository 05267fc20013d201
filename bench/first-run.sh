#!/bin/sh
# A newcomer's first run, timed: a fresh clone of this repository (its own
# target directory), then the README's run command until sluice says it
# listens. Prints the seconds. `bench/first-run.sh [REPO]` (default: here).
set -eu
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
git clone -q "$repo" "$work/sluice"
cd "$work/sluice"
start=$(date +%s)
cargo run --profile fast -p sluice-local >"$work/out" 2>"$work/err" &
pid=$!
until grep -q "sluice listening" "$work/out" 2>/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null; then
    cat "$work/err" >&2
    echo "first run: sluice stopped before it listened" >&2
    exit 1
  fi
  sleep 1
done
echo "first run: listening after $(( $(date +%s) - start )) s"
