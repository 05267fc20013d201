"""Makes KMS signing keys (ECC_NIST_P256, SIGN_VERIFY), as an operator's
`aws kms create-key` does, on the KMS endpoint given (moto's, on loopback),
and prints their ARNs as a JSON list."""

import json
import sys

import boto3


def main():
    endpoint, count = sys.argv[1], int(sys.argv[2])
    kms = boto3.client(
        "kms",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="AKIDSLUICETEST",
        aws_secret_access_key="sluice-test-secret-key",
    )
    arns = [
        kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["Arn"]
        for _ in range(count)
    ]
    print(json.dumps(arns))


if __name__ == "__main__":
    main()
