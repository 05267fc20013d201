//! File records: what is known about each issued file besides its bytes,
//! kept apart from the bytes (the [`crate::store::ObjectStore`]) so that one
//! user's files are one indexed query, newest first, a page at a time.
//!
//! One trait a concern, each of a few methods: [`FileRecords`] (a file's
//! record, found, listed, deleted), [`BatchRecords`] (files issued
//! together), [`ImportRecords`] (where an import stands), [`Usage`] (what a user's files take, and admitting new ones
//! under the caps), [`ProofLease`] (the proof of an object, moved by one
//! caller at a time), and the outbox of events
//! ([`Outbox`]); [`RecordStore`] is all of them, as the
//! service holds them. Each fails with [`RecordError`].
//!
//! Two implementations, one contract (`tests/tests/contract/`): SQLite in
//! the local data directory ([`SqliteRecords`]), and DynamoDB on Lambda
//! (`sluice_aws::DynamoRecords`).

mod batches;
pub(crate) mod error;
mod files;
mod imports;
mod lease;
mod outbox;
mod record;
#[cfg(feature = "local")]
mod sqlite;
mod usage;

pub use batches::{Batch, BatchFile, BatchRecords};
pub use error::RecordError;
pub use files::FileRecords;
pub use imports::{ImportRecord, ImportRecords};
pub use lease::ProofLease;
pub use outbox::Outbox;
pub use record::{Cursor, FileRecord, KeptAsJson, Page, ScanNote, Verdict};
#[cfg(feature = "local")]
pub use sqlite::SqliteRecords;
pub use usage::{Admission, Pending, PendingCaps, Usage, count_then_put};

/// Where file records live: every concern's trait, and the outbox where
/// the store keeps one. What the service holds (`Arc<dyn RecordStore>`).
pub trait RecordStore:
    FileRecords + BatchRecords + ImportRecords + Usage + ProofLease + Send + Sync + std::fmt::Debug
{
    /// The outbox of events this store keeps, if it keeps one (webhooks
    /// are on): it then writes `file.ready`, `file.deleted` and
    /// `file.expired` in the transaction of the change each reports, and
    /// takes the service's other events ([`Outbox::append`]).
    fn outbox(&self) -> Option<&dyn Outbox> {
        None
    }
}
