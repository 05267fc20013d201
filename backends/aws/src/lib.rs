//! sluice's AWS backends: [`S3Store`] (objects in S3, uploads and downloads
//! through presigned URLs), [`DynamoLedger`] (spent tokens as conditional
//! puts with a TTL), [`DynamoRecords`] (file records in the same table) and,
//! for the events function, [`EventBus`] (events put on EventBridge); [`KmsSigner`] signs receipts of custody with a KMS key. This is the only crate that imports `aws-sdk-*`.

mod bus;
mod dynamo;
mod guardduty;
mod importer;
mod kms;
mod records;
mod s3;

pub use bus::{EventBus, NotPut, SOURCE};
pub use dynamo::{DynamoLedger, EVENT};
pub use guardduty::{GuardDutyTags, SCAN_STATUS_TAG};
pub use importer::LambdaImporter;
pub use kms::KmsSigner;
pub use records::{BY_DIGEST, BY_OWNER, DynamoRecords, Item, PENDING, change_event};
pub use s3::S3Store;

use std::time::Duration;

use aws_config::BehaviorVersion;
pub use aws_config::SdkConfig;
use sluice::AwsConfig;
use url::Url;

/// The SDK's configuration from its default chain, in `config`'s region.
pub async fn sdk_config(config: &AwsConfig) -> aws_config::SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(region) = &config.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    loader.load().await
}

/// Both backends from an SDK configuration made elsewhere (tests and
/// setup; sluice opens each where its configuration says, through
/// [`S3Store::new`] and [`DynamoLedger::new`]). Clients are built once, at
/// start; credentials come from the SDK's default chain (the Lambda role in
/// production).
pub fn backends(
    shared: &aws_config::SdkConfig,
    s3: &sluice::config::S3Config,
    dynamodb: &sluice::config::DynamoConfig,
) -> (S3Store, DynamoLedger) {
    (
        S3Store::new(shared, s3),
        DynamoLedger::new(shared, dynamodb),
    )
}

/// Time limits on every S3 and DynamoDB call, below the shortest function
/// timeout (5 s, issuer and resolver): a backend that stops answering is a
/// clear 503 from the function, not a Lambda timeout with no answer.
/// Connect 1 s; one attempt 2 s; the whole operation, retries included, 4 s.
pub fn timeouts() -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(1))
        .operation_attempt_timeout(Duration::from_secs(2))
        .operation_timeout(Duration::from_secs(4))
        .build()
}

/// An emulator endpoint as the SDK takes it: no trailing slash.
fn endpoint(url: &Url) -> &str {
    url.as_str().trim_end_matches('/')
}

/// Why a secret could not be read from AWS Secrets Manager; the message
/// names the secret (never its value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SecretError(String);

/// Reads a secret string from AWS Secrets Manager (an action's upstream
/// key, at cold start).
pub async fn read_secret(secret_id: &str, region: Option<&str>) -> Result<String, SecretError> {
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
            SecretError(format!(
                "reading secret {secret_id}: {}",
                aws_sdk_secretsmanager::error::DisplayErrorContext(e)
            ))
        })?;
    out.secret_string()
        .map(str::to_owned)
        .ok_or_else(|| SecretError(format!("secret {secret_id} has no string value")))
}

/// One version of a secret: its Secrets Manager version id and its value.
#[derive(Debug, Clone)]
pub struct SecretVersion {
    /// The version's id (a UUID).
    pub version_id: String,
    /// The secret string.
    pub value: String,
}

/// The `AWSCURRENT` and, when there is one, `AWSPREVIOUS` versions of a
/// secret: the master secret at cold start, so that `put-secret-value` (or
/// a rotation) moves to a new secret while tokens signed under the previous
/// one stay valid until they expire.
pub async fn read_secret_versions(
    secret_id: &str,
    region: Option<&str>,
) -> Result<(SecretVersion, Option<SecretVersion>), SecretError> {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(region) = region {
        loader = loader.region(aws_config::Region::new(region.to_owned()));
    }
    let client = aws_sdk_secretsmanager::Client::new(&loader.load().await);
    let read = |stage: &'static str| {
        let client = client.clone();
        async move {
            match client
                .get_secret_value()
                .secret_id(secret_id)
                .version_stage(stage)
                .send()
                .await
            {
                Ok(out) => {
                    let value = out.secret_string().ok_or_else(|| {
                        SecretError(format!("secret {secret_id} ({stage}) has no string value"))
                    })?;
                    Ok(Some(SecretVersion {
                        version_id: out.version_id().unwrap_or(stage).to_owned(),
                        value: value.to_owned(),
                    }))
                }
                // A secret never changed has no previous version.
                Err(e)
                    if stage == "AWSPREVIOUS"
                        && e.as_service_error()
                            .is_some_and(|e| e.is_resource_not_found_exception()) =>
                {
                    Ok(None)
                }
                Err(e) => Err(SecretError(format!(
                    "reading secret {secret_id} ({stage}): {}",
                    aws_sdk_secretsmanager::error::DisplayErrorContext(e)
                ))),
            }
        }
    };
    let current = read("AWSCURRENT")
        .await?
        .ok_or_else(|| SecretError(format!("secret {secret_id} has no current version")))?;
    let previous = read("AWSPREVIOUS").await?;
    Ok((current, previous))
}

/// The longest a presigned download may stay valid.
pub const MAX_GET_TTL: Duration = Duration::from_secs(60);
