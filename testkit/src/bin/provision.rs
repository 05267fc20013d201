//! `sluice-provision`: creates the bucket and the table that the
//! environment names (`SLUICE_S3_BUCKET`, `SLUICE_DYNAMODB_TABLE`, on the
//! endpoints `SLUICE_S3_ENDPOINT_URL` and `SLUICE_DYNAMODB_ENDPOINT_URL`),
//! the table as `template.yaml` declares it. For the development emulators
//! (`infra/dev-emulators.sh`); either that already exists is fine.

use std::process::ExitCode;

use sluice::{Backend, Config};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let aws = match Config::from_env() {
        Ok(Config {
            backend: Backend::Aws(aws),
            ..
        }) => aws,
        Ok(_) => {
            eprintln!("sluice-provision: needs SLUICE_BACKEND=aws (see infra/cargo-lambda.env)");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("sluice-provision: {e}");
            return ExitCode::from(2);
        }
    };
    if aws.s3_endpoint.is_none() || aws.dynamodb_endpoint.is_none() {
        eprintln!(
            "sluice-provision: creates resources on emulators only: set SLUICE_S3_ENDPOINT_URL \
             and SLUICE_DYNAMODB_ENDPOINT_URL (in AWS, `sam deploy` creates them)"
        );
        return ExitCode::from(2);
    }
    let (store, ledger) = sluice_aws::connect(&aws).await;
    let bucket = store
        .client()
        .create_bucket()
        .bucket(&aws.bucket)
        .send()
        .await;
    if let Err(e) = bucket {
        let text = aws_sdk_s3::error::DisplayErrorContext(&e).to_string();
        if !text.contains("BucketAlreadyOwnedByYou") && !text.contains("BucketAlreadyExists") {
            eprintln!("sluice-provision: bucket {}: {text}", aws.bucket);
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = sluice_testkit::table::create(ledger.client(), &aws.table).await
        && !e.contains("ResourceInUseException")
    {
        eprintln!("sluice-provision: table {}: {e}", aws.table);
        return ExitCode::FAILURE;
    }
    println!(
        "bucket {} and table {} (as template.yaml declares it) are ready",
        aws.bucket, aws.table
    );
    ExitCode::SUCCESS
}
