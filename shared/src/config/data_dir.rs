//! The data directory, one group: where this machine keeps what it keeps
//! (the bytes with `SLUICE_STORE=dir`, the records with
//! `SLUICE_RECORDS=sqlite`, a generated master secret), and the limits of
//! the directory of objects.

use std::path::PathBuf;

use super::ConfigError;
use super::read::Vars;
use super::settings::Default::{Unset, Value};
use super::settings::Group;
use super::settings::{Parse, Setting, s};

/// The data directory and its store's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    /// Where local objects, the records, the ledger and the generated
    /// secret live (`SLUICE_DATA_DIR`, default `./.sluice`).
    pub path: PathBuf,
    /// Total bytes the local store may hold (`SLUICE_QUOTA_BYTES`, default 20 GiB).
    pub quota_bytes: u64,
    /// Uploads and downloads through sluice at once (`SLUICE_MAX_TRANSFERS`,
    /// default 256); more are answered 503 at once.
    pub max_transfers: usize,
    /// Of those, one user's at once (`SLUICE_MAX_TRANSFERS_PER_USER`, default 16).
    pub max_transfers_per_user: usize,
}

impl DataDir {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            path: vars.raw("SLUICE_DATA_DIR").map_or_else(
                // A function may write only its own ephemeral storage.
                || {
                    PathBuf::from(if vars.in_lambda() {
                        "/tmp/sluice"
                    } else {
                        ".sluice"
                    })
                },
                PathBuf::from,
            ),
            quota_bytes: vars.positive("SLUICE_QUOTA_BYTES")?,
            max_transfers: vars.count("SLUICE_MAX_TRANSFERS")?,
            max_transfers_per_user: vars.count("SLUICE_MAX_TRANSFERS_PER_USER")?,
        })
    }
}

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_DATA_DIR",
        Group::Core,
        Parse::Text,
        Unset("`.sluice`; in a Lambda function, `/tmp/sluice` (its own ephemeral storage)"),
        "local objects, ledger, file records, generated secret, and the spool of an import not declared",
    ),
    s(
        "SLUICE_QUOTA_BYTES",
        Group::Limits,
        Parse::Positive,
        Value("21474836480"),
        "bytes the local store may hold (20 GiB)",
    ),
    s(
        "SLUICE_MAX_TRANSFERS",
        Group::Limits,
        Parse::Positive,
        Value("256"),
        "local: uploads and downloads through sluice at once; more get 503 with `Retry-After`",
    ),
    s(
        "SLUICE_MAX_TRANSFERS_PER_USER",
        Group::Limits,
        Parse::Positive,
        Value("16"),
        "local: uploads and downloads one user may have in progress at once, so a few users cannot take every slot; more get 503 with `Retry-After`",
    ),
];
