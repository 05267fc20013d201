//! Files issued together by one call, and their records.

use serde::{Deserialize, Serialize};

use super::error::RecordError;
use crate::file::FileId;
use crate::sha::Sha256;

/// Files issued together by one call (`request_uploads`): the batch's
/// handle names it, and it lists its files in the order asked, each with
/// the path its upload line reads. Written once; it expires with its files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    /// The batch's id (shaped as a file id: the same 16 bytes, in the
    /// order they were made).
    #[serde(skip)]
    pub id: Option<FileId>,
    /// The `sub` of the user who asked for it.
    pub owner: String,
    /// When it expires (its files' expiry).
    pub expires_at: i64,
    /// Its files in the order asked, each with what the batch's line pins
    /// of it (its manifest: path or name, size, digest).
    pub files: Vec<BatchFile>,
}

/// One file of a [`Batch`]: its id, and the line of the batch's manifest
/// ([`crate::curl::manifest_digest`]) it stands for, kept whole so that the
/// manifest can be answered even once the file is gone. Kept as a JSON
/// array (a batch holds up to a thousand of them in one item).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    from = "(String, String, u64, Sha256)",
    into = "(String, String, u64, Sha256)"
)]
pub struct BatchFile {
    /// The file's id.
    pub id: String,
    /// The path its upload line reads, or the name its download line writes.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256.
    pub sha256: Sha256,
}

impl From<(String, String, u64, Sha256)> for BatchFile {
    fn from((id, path, size, sha256): (String, String, u64, Sha256)) -> Self {
        Self {
            id,
            path,
            size,
            sha256,
        }
    }
}

impl From<BatchFile> for (String, String, u64, Sha256) {
    fn from(f: BatchFile) -> Self {
        (f.id, f.path, f.size, f.sha256)
    }
}

impl super::record::KeptAsJson for Batch {
    fn id(&self) -> Option<&FileId> {
        self.id.as_ref()
    }

    fn set_id(&mut self, id: FileId) {
        self.id = Some(id);
    }
}

/// Batches' records.
#[async_trait::async_trait]
pub trait BatchRecords: Send + Sync {
    /// Records `batch`, once (its id is fresh).
    async fn put_batch(&self, batch: &Batch) -> Result<(), RecordError>;

    /// Batch `id`, expired or not; `None` if there is none.
    async fn get_batch(&self, id: &FileId) -> Result<Option<Batch>, RecordError>;
}
