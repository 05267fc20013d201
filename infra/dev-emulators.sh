#!/usr/bin/env bash
# Starts the local AWS emulators for `cargo lambda watch` (and for running
# `sluice` with SLUICE_BACKEND=aws by hand), and creates the bucket and table
# the env file names: s3s-fs for S3, dynalite for DynamoDB (the emulators the
# tests use). Needs `make clients` (s3s-fs, the npm packages, the venv).
# Stop them with: kill $(cat .emulators.pids)
set -euo pipefail
cd "$(dirname "$0")/.."
set -a; . infra/cargo-lambda.env; set +a
root=${SLUICE_DEV_S3_ROOT:-.sluice-s3}
mkdir -p "$root"
s3s-fs --host 127.0.0.1 --port 8014 --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" "$root" > /dev/null 2>&1 &
echo $! > .emulators.pids
node tests/clients/node_modules/dynalite/cli.js --host 127.0.0.1 --port 5000 --createTableMs 0 > /dev/null 2>&1 &
echo $! >> .emulators.pids
for port in 8014 5000; do
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port" && break; sleep 0.1; done
done
.venv/bin/python - <<'PY'
import os
import boto3

s3 = boto3.client("s3", endpoint_url=os.environ["SLUICE_S3_ENDPOINT_URL"], region_name="us-east-1")
try:
    s3.create_bucket(Bucket=os.environ["SLUICE_S3_BUCKET"])
except (s3.exceptions.BucketAlreadyOwnedByYou, s3.exceptions.BucketAlreadyExists):
    pass
ddb = boto3.client("dynamodb", endpoint_url=os.environ["SLUICE_DYNAMODB_ENDPOINT_URL"], region_name="us-east-1")
table = os.environ["SLUICE_DYNAMODB_TABLE"]
if table not in ddb.list_tables()["TableNames"]:
    ddb.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
print(f"emulators ready: s3 {os.environ['SLUICE_S3_ENDPOINT_URL']}, dynamodb {os.environ['SLUICE_DYNAMODB_ENDPOINT_URL']}")
PY
