#!/usr/bin/env bash
# Deletes a deployed sluice stack and everything in it: empties the versioned
# bucket (every object version and delete marker: CloudFormation cannot
# delete a bucket that holds any), then `sam delete`. The files, spent
# tokens and records go with it; links and handles in flight stop working.
#
#   infra/teardown.sh [stack-name] [region]     (default: sluice, the CLI's region)
#
# Needs the AWS CLI and SAM CLI with credentials for the stack's account.
set -euo pipefail
stack=${1:-sluice}
region_args=()
if [[ -n "${2:-}" ]]; then region_args=(--region "$2"); fi

bucket=$(aws cloudformation describe-stacks "${region_args[@]}" --stack-name "$stack" \
  --query "Stacks[0].Outputs[?OutputKey=='BucketName'].OutputValue" --output text)
if [[ -z "$bucket" || "$bucket" == "None" ]]; then
  echo "stack $stack has no BucketName output: is it a sluice stack?" >&2
  exit 1
fi
read -r -p "Delete stack $stack and every file in s3://$bucket? Type the stack name to confirm: " answer
[[ "$answer" == "$stack" ]] || { echo "not confirmed; nothing deleted" >&2; exit 1; }

echo "emptying s3://$bucket (all versions and delete markers)…"
while :; do
  batch=$(aws s3api list-object-versions "${region_args[@]}" --bucket "$bucket" --max-items 1000 \
    --query '{Objects: [Versions, DeleteMarkers][][].{Key: Key, VersionId: VersionId}}' --output json)
  if [[ "$batch" == *'"Objects": []'* || "$batch" == *'"Objects": null'* ]]; then break; fi
  aws s3api delete-objects "${region_args[@]}" --bucket "$bucket" --delete "$batch" --output text > /dev/null
done

sam delete "${region_args[@]}" --stack-name "$stack" --no-prompts
echo "stack $stack deleted"
