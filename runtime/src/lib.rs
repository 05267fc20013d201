//! Process wiring for every sluice binary: the backends the config names
//! (local or AWS), and serving a router as a plain HTTP server or, inside
//! AWS Lambda, through the Lambda runtime API.

use std::process::ExitCode;
use std::sync::Arc;

use axum::Router;
use sluice::runtime::{self, StartError};
use sluice::store::LocalStore;
use sluice::{Backend, Config, Keyring, MasterSecret, Sluice};
use url::Url;

/// Sluice over the configured backends.
#[derive(Debug)]
pub struct Opened {
    /// The shared state.
    pub sluice: Sluice,
    /// The local store, to sweep; `None` on AWS (S3 lifecycle rules expire objects).
    pub local_store: Option<LocalStore>,
}

/// Builds sluice over the backends `config` names.
pub async fn open(config: &Config, public_url: Url) -> Result<Opened, StartError> {
    match &config.backend {
        Backend::Local => {
            let (sluice, store) = runtime::local_sluice(config, public_url)?;
            Ok(Opened {
                sluice,
                local_store: Some(store),
            })
        }
        Backend::Aws(aws) => {
            let secret = match (&config.master_secret, &aws.master_secret_id) {
                (Some(secret), _) => secret.clone(),
                (None, Some(id)) => {
                    let value = sluice_aws::read_secret(id, aws.region.as_deref())
                        .await
                        .map_err(StartError::Secret)?;
                    MasterSecret::new(value.trim().as_bytes().to_vec()).map_err(|e| {
                        StartError::Secret(format!("SLUICE_MASTER_SECRET_ID {id}: {e}"))
                    })?
                }
                (None, None) => unreachable!("Config::from_env requires one of them"),
            };
            let keys = Keyring::new((config.key_id.clone(), secret), config.previous.clone());
            let settings = sluice_aws::AwsSettings {
                bucket: aws.bucket.clone(),
                table: aws.table.clone(),
                region: aws.region.clone(),
                s3_endpoint: aws
                    .s3_endpoint
                    .as_ref()
                    .map(|u| u.as_str().trim_end_matches('/').to_owned()),
                dynamodb_endpoint: aws
                    .dynamodb_endpoint
                    .as_ref()
                    .map(|u| u.as_str().trim_end_matches('/').to_owned()),
            };
            let (store, ledger) = sluice_aws::connect(&settings).await;
            Ok(Opened {
                sluice: runtime::assemble(
                    config,
                    public_url,
                    keys,
                    Arc::new(store),
                    Arc::new(ledger),
                ),
                local_store: None,
            })
        }
    }
}

/// `main` for a function binary: configuration from the environment, the
/// configured backends, one router, run by the Lambda runtime when inside
/// Lambda and as a plain HTTP server otherwise.
pub fn main_with(router: fn(Sluice) -> Router) -> ExitCode {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sluice: {e}");
            return ExitCode::from(2);
        }
    };
    runtime::init_tracing(&config);
    let rt = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sluice: starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result: Result<(), String> = rt.block_on(async {
        if config.lambda {
            let url = config
                .public_url
                .clone()
                .expect("Config::from_env requires SLUICE_PUBLIC_URL in Lambda");
            let opened = open(&config, url).await.map_err(|e| e.to_string())?;
            lambda_http::run(router(opened.sluice))
                .await
                .map_err(|e| format!("lambda runtime: {e}"))
        } else {
            let (listener, url) = runtime::bind(&config).await.map_err(|e| e.to_string())?;
            let opened = open(&config, url.clone())
                .await
                .map_err(|e| e.to_string())?;
            println!("listening on {url}");
            runtime::serve(listener, router(opened.sluice), runtime::shutdown_signal())
                .await
                .map_err(|e| format!("serving: {e}"))
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sluice: {e}");
            ExitCode::FAILURE
        }
    }
}
