//! The data directory, one group: where this machine keeps what it keeps
//! (the bytes with `SLUICE_STORE=dir`, the records with
//! `SLUICE_RECORDS=sqlite`, a generated master secret), and the limits of
//! the directory of objects.

use std::path::PathBuf;

use super::ConfigError;
use super::read::Vars;

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
            path: PathBuf::from(vars.value("SLUICE_DATA_DIR").unwrap_or(".sluice")),
            quota_bytes: vars.positive("SLUICE_QUOTA_BYTES")?,
            max_transfers: vars.count("SLUICE_MAX_TRANSFERS")?,
            max_transfers_per_user: vars.count("SLUICE_MAX_TRANSFERS_PER_USER")?,
        })
    }
}
