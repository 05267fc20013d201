#!/usr/bin/env bash
# Starts the local AWS emulators for `cargo lambda watch` (and for running
# `sluice` with SLUICE_BACKEND=aws by hand), and creates the bucket and table
# the env file names: s3s-fs for S3, dynalite for DynamoDB (the emulators the
# tests use), on the ports of the env file's endpoint URLs. Needs
# `make clients` (s3s-fs and the npm packages).
#
#   infra/dev-emulators.sh [ENV_FILE]     (default: infra/cargo-lambda.env)
#
# Stop them with: kill $(cat .emulators.pids)
set -euo pipefail
cd "$(dirname "$0")/.."
env_file=${1:-infra/cargo-lambda.env}
set -a
# shellcheck source=/dev/null
. "$env_file"
set +a
port_of() { local rest="${1##*:}"; echo "${rest%%/*}"; }
s3_port=$(port_of "$SLUICE_S3_ENDPOINT_URL")
ddb_port=$(port_of "$SLUICE_DYNAMODB_ENDPOINT_URL")
root=${SLUICE_DEV_S3_ROOT:-.sluice-s3}
pids=${SLUICE_DEV_PIDS:-.emulators.pids}
mkdir -p "$root"
s3s-fs --host 127.0.0.1 --port "$s3_port" --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" "$root" > /dev/null 2>&1 &
echo $! > "$pids"
node tests/clients/node_modules/dynalite/cli.js --host 127.0.0.1 --port "$ddb_port" --createTableMs 0 > /dev/null 2>&1 &
echo $! >> "$pids"
for port in "$s3_port" "$ddb_port"; do
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port" && break; sleep 0.1; done
done
# The bucket, and the table exactly as template.yaml declares it (its two
# indexes of file records included): the one definition the tests use too.
# Without `-p`: built with the features the whole workspace unifies, as
# `cargo lambda watch` and `make test` build, so nothing is compiled twice.
cargo run -q --bin sluice-provision
echo "emulators ready: s3 $SLUICE_S3_ENDPOINT_URL, dynamodb $SLUICE_DYNAMODB_ENDPOINT_URL"
