//! sluice's AWS backends: [`S3Store`] (objects in S3, uploads and downloads
//! through presigned URLs) and [`DynamoLedger`] (spent tokens as conditional
//! puts with a TTL). This is the only crate that imports `aws-sdk-*`.

mod dynamo;
mod s3;

pub use dynamo::DynamoLedger;
pub use s3::S3Store;

use std::time::Duration;

use aws_config::BehaviorVersion;

/// Where the AWS resources are, from the config.
#[derive(Debug, Clone)]
pub struct AwsSettings {
    /// The bucket that holds objects and file records.
    pub bucket: String,
    /// The table that records spent tokens.
    pub table: String,
    /// The region; the SDK's default chain when `None`.
    pub region: Option<String>,
    /// An S3 endpoint (an emulator such as s3s-fs); path-style addressing.
    pub s3_endpoint: Option<String>,
    /// A DynamoDB endpoint (an emulator such as moto).
    pub dynamodb_endpoint: Option<String>,
}

/// Builds both backends. Clients are built once, at start; credentials come
/// from the SDK's default chain (the Lambda role in production).
pub async fn connect(settings: &AwsSettings) -> (S3Store, DynamoLedger) {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(region) = &settings.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    backends(&loader.load().await, settings)
}

/// Builds both backends from an SDK configuration made elsewhere.
pub fn backends(shared: &aws_config::SdkConfig, settings: &AwsSettings) -> (S3Store, DynamoLedger) {
    (
        S3Store::new(shared, settings),
        DynamoLedger::new(shared, settings),
    )
}

/// Reads a secret string from AWS Secrets Manager (the master secret, at
/// cold start).
pub async fn read_secret(secret_id: &str, region: Option<&str>) -> Result<String, String> {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(region) = region {
        loader = loader.region(aws_config::Region::new(region.to_owned()));
    }
    let client = aws_sdk_secretsmanager::Client::new(&loader.load().await);
    let out = client
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|e| {
            format!(
                "reading secret {secret_id}: {}",
                aws_sdk_secretsmanager::error::DisplayErrorContext(e)
            )
        })?;
    out.secret_string()
        .map(str::to_owned)
        .ok_or_else(|| format!("secret {secret_id} has no string value"))
}

/// The longest a presigned download may stay valid.
pub const MAX_GET_TTL: Duration = Duration::from_secs(60);
