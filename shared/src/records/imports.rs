//! Imports' records: where an import stands, kept beside the files so that
//! its outcome outlives the process that fetched it (a restart locally, and
//! another function than the one that was asked, on AWS).

use serde::{Deserialize, Serialize};

use super::error::RecordError;
use crate::file::FileId;

/// Where one import stands, written when it begins and again when it ends
/// (the last write wins: one process runs an import).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportRecord {
    /// The import's file id (the file's, once it is issued).
    #[serde(skip)]
    pub id: Option<FileId>,
    /// The `sub` of the user who asked for it.
    pub owner: String,
    /// Where it comes from: the URL's scheme and host, never more.
    pub source: String,
    /// `pending`, `ready` or `rejected`.
    pub state: String,
    /// Why it was rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When this state was written (Unix seconds): a state still pending
    /// long past it was left by a process that stopped.
    pub noted_at: i64,
    /// When the record goes.
    pub expires_at: i64,
}

impl super::record::KeptAsJson for ImportRecord {
    fn id(&self) -> Option<&FileId> {
        self.id.as_ref()
    }

    fn set_id(&mut self, id: FileId) {
        self.id = Some(id);
    }
}

/// Imports' records.
#[async_trait::async_trait]
pub trait ImportRecords: Send + Sync {
    /// Writes where import `record.id` stands, over what was there.
    async fn put_import(&self, record: &ImportRecord) -> Result<(), RecordError>;

    /// Import `id`, expired or not; `None` if there is none.
    async fn get_import(&self, id: &FileId) -> Result<Option<ImportRecord>, RecordError>;

    /// Takes one of `owner`'s `limit` turns for an import under way, held
    /// by `holder` (the import's id) until `until` (Unix seconds: the turn
    /// of a process that died lapses then), on every replica at once: the
    /// turn's number, or `None` when all of them are held.
    async fn take_import_turn(
        &self,
        owner: &str,
        holder: &str,
        limit: u32,
        until: i64,
    ) -> Result<Option<u32>, RecordError>;

    /// Gives back `owner`'s turn `n`, if `holder` still holds it.
    async fn give_import_turn(&self, owner: &str, n: u32, holder: &str) -> Result<(), RecordError>;
}
