//! Why a process could not start: one error, each cause its own variant.

use std::io;

/// Why a process could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The configuration was refused.
    #[error("configuration: {0}")]
    Config(#[from] sluice::config::ConfigError),
    /// The data directory or listener could not be set up.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The ledger could not be opened.
    #[error("ledger: {0}")]
    Ledger(#[from] sluice::ledger::LedgerError),
    /// The master secret could not be read.
    #[error("master secret: {0}")]
    Secret(String),
    /// The actions catalog was refused; the message names the action and field.
    #[error("actions catalog {origin}: {error}")]
    Actions {
        /// Where the catalog came from (a path, an S3 key).
        origin: String,
        /// What is wrong with it.
        error: sluice::actions::CatalogError,
    },
    /// The webhook endpoints were refused (a secret, a file's entry).
    #[error("webhooks {origin}: {reason}")]
    Webhooks {
        /// Where the endpoints came from (SLUICE_WEBHOOK_URL, a path).
        origin: String,
        /// What is wrong, never a secret.
        reason: String,
    },
    /// The config names the local backends, which this binary was built without.
    #[error(
        "SLUICE_BACKEND=local (or SLUICE_STORE=dir, or SLUICE_RECORDS=sqlite), but this binary was \
         built for AWS without the local backends: set SLUICE_BACKEND=aws, run the `sluice` binary, \
         or build with `--features local`"
    )]
    NoLocalBackend,
    /// `SLUICE_BACKEND=aws` in a build without the AWS backends (the
    /// `sluice` binary's default, so that a first run is quick).
    #[error(
        "SLUICE_BACKEND=aws (or SLUICE_STORE=s3, or SLUICE_RECORDS=dynamodb) needs the AWS backends, \
         which this build leaves out: build with `--features aws` \
         (e.g. `cargo run --profile fast --bin sluice --features aws`)"
    )]
    NoAwsBackend,
}

pub(super) fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> StartError {
    let what = what.into();
    move |source| StartError::Io { what, source }
}
