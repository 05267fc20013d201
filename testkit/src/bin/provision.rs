//! `sluice-provision`: creates the bucket and the table that the
//! environment names (`SLUICE_S3_BUCKET` on `SLUICE_S3_ENDPOINT_URL` when the
//! bytes are in S3, `SLUICE_DYNAMODB_TABLE` on `SLUICE_DYNAMODB_ENDPOINT_URL`
//! when the records are in DynamoDB), the table as `template.yaml` declares
//! it. For the development emulators (`infra/dev-emulators.sh`); either that
//! already exists is fine.

use std::process::ExitCode;

use sluice::Config;
use sluice::config::{Records, Store};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("sluice-provision: {e}");
            return ExitCode::from(2);
        }
    };
    let s3 = match &config.store {
        Store::S3(s3) => Some(s3),
        Store::Dir => None,
    };
    let dynamodb = match &config.records {
        Records::DynamoDb(d) => Some(d),
        Records::Sqlite => None,
    };
    if s3.is_none() && dynamodb.is_none() {
        eprintln!(
            "sluice-provision: nothing to create: needs SLUICE_STORE=s3 or SLUICE_RECORDS=dynamodb (SLUICE_BACKEND=aws: see infra/cargo-lambda.env)"
        );
        return ExitCode::from(2);
    }
    if s3.is_some_and(|s| s.endpoint.is_none()) || dynamodb.is_some_and(|d| d.endpoint.is_none()) {
        eprintln!(
            "sluice-provision: creates resources on emulators only: set SLUICE_S3_ENDPOINT_URL \
             and SLUICE_DYNAMODB_ENDPOINT_URL (in AWS, `sam deploy` creates them)"
        );
        return ExitCode::from(2);
    }
    let shared = sluice_aws::sdk_config(&config.aws).await;
    let mut made = Vec::new();
    if let Some(s3) = s3 {
        let store = sluice_aws::S3Store::new(&shared, s3);
        let bucket = store
            .client()
            .create_bucket()
            .bucket(&s3.bucket)
            .send()
            .await;
        if let Err(e) = bucket {
            let text = aws_sdk_s3::error::DisplayErrorContext(&e).to_string();
            if !text.contains("BucketAlreadyOwnedByYou") && !text.contains("BucketAlreadyExists") {
                eprintln!("sluice-provision: bucket {}: {text}", s3.bucket);
                return ExitCode::FAILURE;
            }
        }
        made.push(format!("bucket {}", s3.bucket));
    }
    if let Some(dynamodb) = dynamodb {
        let ledger = sluice_aws::DynamoLedger::new(&shared, dynamodb);
        if let Err(e) = sluice_testkit::table::create(ledger.client(), &dynamodb.table).await
            && !e.contains("ResourceInUseException")
        {
            eprintln!("sluice-provision: table {}: {e}", dynamodb.table);
            return ExitCode::FAILURE;
        }
        made.push(format!(
            "table {} (as template.yaml declares it)",
            dynamodb.table
        ));
    }
    println!("{} ready", made.join(" and "));
    ExitCode::SUCCESS
}
