//! Malware scanners: what decides whether a file's bytes may be used
//! (DESIGN.md, "Malware scanning"). A scanner is asked about one stored
//! object and answers a [`Finding`]; the gate that holds a file
//! `scanning` until then, and acts on the verdict, is
//! `service::gate`.
//!
//! - [`clamd::Clamd`]: clamd, sent the object's bytes with `INSTREAM` by
//!   this server, in the background (a server that lives on).
//! - GuardDuty Malware Protection for S3 (`sluice_aws::GuardDutyTags`):
//!   AWS scans each object itself and tags it; the scanner reads the tag,
//!   while answering.

pub mod clamd;

use crate::file::FileMeta;
use crate::store::{ObjectStore, StoreError};

/// What a scanner says of a file's bytes now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Nothing found, by `by` (the scanner and its version).
    Clean {
        /// The scanner and its version.
        by: String,
    },
    /// A signature matched.
    Infected {
        /// The signature's name.
        signature: String,
        /// The scanner and its version.
        by: String,
    },
    /// The scanner will not scan it (over its size limit, a type it does
    /// not take): the operator's policy decides.
    Unscannable {
        /// Why, in words.
        why: String,
    },
    /// No verdict yet (GuardDuty has not tagged the object): ask again.
    Waiting,
}

/// Why a scan gave no finding: the file stays `scanning`, and the scan is
/// tried again until the deadline.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The scanner could not be reached, or broke off.
    #[error("the scanner could not be reached: {0}")]
    Unreachable(String),
    /// The scanner answered something this version does not read.
    #[error("the scanner answered {0:?}")]
    Odd(String),
    /// The object could not be read.
    #[error("the object could not be read: {0}")]
    Store(#[from] StoreError),
    /// The object is not there (deleted meanwhile).
    #[error("the object is gone")]
    Gone,
}

/// A malware scanner.
#[async_trait::async_trait]
pub trait Scanner: Send + Sync + std::fmt::Debug {
    /// Whether a scan reads the bytes here, and so runs in the background
    /// (clamd), or only asks what another scanned, while answering
    /// (GuardDuty's tag).
    fn reads_bytes(&self) -> bool;

    /// What the scanner says of `file`'s object in `store`.
    async fn scan(&self, file: &FileMeta, store: &dyn ObjectStore) -> Result<Finding, ScanError>;
}

/// No scanner at all (GuardDuty asked for where no bucket's tags can be
/// read): every file waits, and nothing is delivered.
#[derive(Debug)]
pub struct NoScanner;

#[async_trait::async_trait]
impl Scanner for NoScanner {
    fn reads_bytes(&self) -> bool {
        false
    }

    async fn scan(&self, _file: &FileMeta, _store: &dyn ObjectStore) -> Result<Finding, ScanError> {
        Ok(Finding::Waiting)
    }
}
