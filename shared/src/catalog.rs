//! File records: a small JSON object per file, written when the file is
//! issued, so a file id resolves to its pinned description and `list_files`
//! can tell pending files (issued, not yet uploaded) from ready ones.

use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::file::{FileId, FileMeta, ObjectKey};
use crate::service::Sluice;
use crate::sha::Sha256;
use crate::time::{now_unix, rfc3339};

/// What is stored about a file besides its bytes.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    file_id: String,
    owner: String,
    filename: String,
    content_type: String,
    size: u64,
    sha256: Sha256,
    created_at: i64,
    expires_at: i64,
}

/// Whether a file's bytes have arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FileState {
    /// Issued; the upload has not completed.
    Pending,
    /// Uploaded and verified.
    Ready,
}

/// One entry of `list_files`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FileListing {
    /// The file's id.
    pub file_id: String,
    /// The name it was uploaded under.
    pub filename: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex sha256.
    pub sha256: Sha256,
    /// The media type.
    pub content_type: String,
    /// `pending` until the bytes arrive, then `ready`.
    pub state: FileState,
    /// When it was issued (RFC 3339).
    pub created_at: String,
    /// When its handle and record expire (RFC 3339).
    pub expires_at: String,
}

impl Record {
    fn meta(&self) -> Option<FileMeta> {
        Some(FileMeta {
            id: FileId::parse(&self.file_id)?,
            owner: self.owner.clone(),
            filename: self.filename.clone(),
            content_type: self.content_type.clone(),
            size: self.size,
            sha256: self.sha256,
        })
    }
}

impl Sluice {
    /// Records a newly issued file.
    pub(crate) async fn record_file(
        &self,
        file: &FileMeta,
        expires_at: i64,
    ) -> Result<(), ApiError> {
        let record = Record {
            file_id: file.id.to_string(),
            owner: file.owner.clone(),
            filename: file.filename.clone(),
            content_type: file.content_type.clone(),
            size: file.size,
            sha256: file.sha256,
            created_at: now_unix(),
            expires_at,
        };
        let bytes = serde_json::to_vec(&record).map_err(ApiError::internal)?;
        self.store()
            .put_small(&ObjectKey::record(&file.owner, &file.id), bytes.into())
            .await?;
        Ok(())
    }

    async fn read_record(&self, key: &ObjectKey) -> Result<Option<Record>, ApiError> {
        let Some(bytes) = self.store().get_small(key).await? else {
            return Ok(None);
        };
        // A record this version cannot read is skipped, not fatal.
        Ok(serde_json::from_slice(&bytes).ok())
    }

    /// Finds file `id` among `owner`'s files. Another user's file id is
    /// simply not found: ids are never resolved across owners.
    pub async fn find_file(&self, owner: &str, id: &FileId) -> Result<FileMeta, ApiError> {
        let not_found = || {
            ApiError::BadRequest(format!(
                "no file {id} among your files: call list_files to see them, or pass the handle"
            ))
        };
        let record = self
            .read_record(&ObjectKey::record(owner, id))
            .await?
            .filter(|r| r.owner == owner)
            .ok_or_else(not_found)?;
        if record.expires_at <= now_unix() {
            return Err(ApiError::BadRequest(format!(
                "file {id} has expired: upload it again with request_upload"
            )));
        }
        record.meta().ok_or_else(not_found)
    }

    /// The caller's unexpired files, newest first.
    pub async fn list_files(&self, owner: &str) -> Result<Vec<FileListing>, ApiError> {
        let now = now_unix();
        let mut out = Vec::new();
        for key in self.store().list(&ObjectKey::records_prefix(owner)).await? {
            let Some(record) = self.read_record(&key).await? else {
                continue;
            };
            if record.owner != owner || record.expires_at <= now {
                continue;
            }
            let Some(meta) = record.meta() else { continue };
            let state = match self.store().head(&meta.object_key()).await? {
                Some(_) => FileState::Ready,
                None => FileState::Pending,
            };
            out.push((
                record.created_at,
                FileListing {
                    file_id: record.file_id,
                    filename: record.filename,
                    size: record.size,
                    sha256: record.sha256,
                    content_type: record.content_type,
                    state,
                    created_at: rfc3339(record.created_at),
                    expires_at: rfc3339(record.expires_at),
                },
            ));
        }
        out.sort_by_key(|(created, _)| std::cmp::Reverse(*created));
        Ok(out.into_iter().map(|(_, l)| l).collect())
    }
}
