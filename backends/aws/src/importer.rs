//! Imports and zips started in the importer function: an asynchronous
//! invocation (`Event`) per import, its job as the payload, or per zip
//! (`{"zip": <batch id>}`). The function's outcome is written to the
//! records (an import's) or the store (a zip), where the function that
//! was asked reads it.

use sluice::Error;
use sluice::config::AwsConfig;
use sluice::file::FileId;
use sluice::service::imports::{Dispatch, ImportJob, ImporterEvent};

/// Starts imports in the function `SLUICE_IMPORTER_FUNCTION` names.
#[derive(Debug, Clone)]
pub struct LambdaImporter {
    client: aws_sdk_lambda::Client,
    function: String,
}

impl LambdaImporter {
    /// The importer `function` (a name or an ARN), reached through the
    /// Lambda API (`SLUICE_LAMBDA_ENDPOINT_URL`: an emulator's, in
    /// development).
    pub fn new(shared: &aws_config::SdkConfig, aws: &AwsConfig, function: &str) -> Self {
        // One attempt: an invocation retried after a lost answer would
        // start the import twice. Lambda answers an asynchronous invocation
        // at once (an emulator may answer only once the function ends: a
        // small import's time is allowed for).
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(std::time::Duration::from_secs(1))
            .operation_attempt_timeout(std::time::Duration::from_secs(20))
            .operation_timeout(std::time::Duration::from_secs(20))
            .build();
        let mut config = aws_sdk_lambda::config::Builder::from(shared)
            .timeout_config(timeouts)
            .retry_config(aws_config::retry::RetryConfig::disabled());
        if let Some(endpoint) = &aws.lambda_endpoint {
            config = config.endpoint_url(crate::endpoint(endpoint));
        }
        Self {
            client: aws_sdk_lambda::Client::from_conf(config.build()),
            function: function.to_owned(),
        }
    }
}

#[async_trait::async_trait]
impl Dispatch for LambdaImporter {
    async fn start(&self, job: &ImportJob) -> Result<(), Error> {
        self.invoke(&ImporterEvent::Import(Box::new(job.clone())))
            .await
    }

    async fn start_zip(&self, batch: &FileId) -> Result<(), Error> {
        self.invoke(&ImporterEvent::Zip {
            zip: batch.to_string(),
        })
        .await
    }
}

impl LambdaImporter {
    /// Invokes the importer with `event`, without waiting for its end.
    async fn invoke(&self, event: &ImporterEvent) -> Result<(), Error> {
        let payload = serde_json::to_vec(event).map_err(Error::internal)?;
        self.client
            .invoke()
            .function_name(&self.function)
            .invocation_type(aws_sdk_lambda::types::InvocationType::Event)
            .payload(aws_sdk_lambda::primitives::Blob::new(payload))
            .send()
            .await
            .map_err(|e| {
                tracing::warn!(error = %aws_sdk_lambda::error::DisplayErrorContext(&e), "the importer was not invoked");
                Error::internal(std::io::Error::other("the importer function could not be started"))
            })?;
        Ok(())
    }
}
