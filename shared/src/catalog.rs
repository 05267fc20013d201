//! The service side of file records ([`crate::records`]): written when a
//! file is issued, so a file id resolves to its pinned description,
//! `list_files` pages through a user's files and tells pending ones (issued,
//! not yet uploaded) from ready ones, and the per-user caps on pending files
//! and declared bytes can be checked.

use futures_util::{StreamExt as _, TryStreamExt as _};
use serde::Serialize;

use crate::error::ApiError;
use crate::file::{FileId, FileMeta, owner_hash};
use crate::records::{Cursor, FileRecord, Pending};
use crate::service::Sluice;
use crate::sha::Sha256;
use crate::time::{now_unix, rfc3339};

/// The page size of `list_files` when none is asked for.
pub const DEFAULT_PAGE: usize = 50;
/// The largest page of `list_files`.
pub const MAX_PAGE: usize = 100;
/// HEADs at once when pending entries are checked for their bytes.
const HEADS_AT_ONCE: usize = 8;

/// Per-user limits on files waiting for their bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingCaps {
    /// Pending files one user may have (`SLUICE_MAX_PENDING_FILES`).
    pub files: u64,
    /// Bytes those files may declare in all (`SLUICE_MAX_PENDING_BYTES`).
    pub bytes: u64,
}

impl PendingCaps {
    /// Whether one more file of `size` bytes fits beside `pending`.
    pub fn admit(&self, pending: Pending, size: u64) -> bool {
        pending.files < self.files && pending.bytes.saturating_add(size) <= self.bytes
    }
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

/// One page of `list_files`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FilePage {
    /// The files, newest first.
    pub files: Vec<FileListing>,
    /// Pass as `cursor` for the next page; absent after the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Sluice {
    /// Records a newly issued file, pending until its bytes arrive, unless
    /// its owner already has as many pending files, or pending bytes, as
    /// the caps allow (429, nothing recorded). Files uploaded straight to
    /// the store are found ready before a refusal.
    pub(crate) async fn record_file(
        &self,
        file: &FileMeta,
        expires_at: i64,
    ) -> Result<(), ApiError> {
        let record = FileRecord {
            file: file.clone(),
            created_ms: crate::time::now_millis(),
            expires_at,
            ready: false,
        };
        let (records, caps, now) = (self.records(), self.parts().pending_caps, now_unix());
        // Cheap first: the count and the write in one step; the records
        // only at a cap, to find uploaded ones still marked pending.
        if records.put_within(&record, caps, now).await?.is_none() {
            return Ok(());
        }
        let pending = records.pending(&file.owner, now, caps.files).await?;
        let pending = self.refresh(pending).await?;
        if records.put_within(&record, caps, now).await?.is_none() {
            return Ok(());
        }
        Err(over_caps(caps, &pending, file.size, now))
    }

    /// Notes that a file's bytes have arrived (uploads through sluice).
    pub async fn file_stored(&self, file: &FileMeta) -> Result<(), ApiError> {
        self.records().mark_ready(&file.owner, &file.id).await?;
        Ok(())
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
            .records()
            .get(owner, id)
            .await?
            .filter(|r| r.file.owner == owner)
            .ok_or_else(not_found)?;
        if record.expires_at <= now_unix() {
            return Err(ApiError::BadRequest(format!(
                "file {id} has expired: upload it again with request_upload"
            )));
        }
        Ok(record.file)
    }

    /// A record marked pending whose bytes have arrived by now (a HEAD finds
    /// them: uploads straight to S3 are not seen otherwise) is marked ready;
    /// returns the record with its state brought up to date.
    pub(crate) async fn settle(&self, mut record: FileRecord) -> Result<FileRecord, ApiError> {
        if !record.ready
            && self
                .store()
                .head(&record.file.object_key())
                .await?
                .is_some()
        {
            self.file_stored(&record.file).await?;
            record.ready = true;
        }
        Ok(record)
    }

    /// [`Sluice::settle`] for each of `records`, with bounded-parallel HEADs.
    async fn refresh(&self, records: Vec<FileRecord>) -> Result<Vec<FileRecord>, ApiError> {
        futures_util::stream::iter(records)
            .map(|record| self.settle(record))
            .buffered(HEADS_AT_ONCE)
            .try_collect()
            .await
    }

    /// One page of the caller's unexpired files, newest first: at most
    /// `limit` (default [`DEFAULT_PAGE`], at most [`MAX_PAGE`]), after `cursor`.
    pub async fn list_files(
        &self,
        owner: &str,
        limit: Option<usize>,
        cursor: Option<&str>,
    ) -> Result<FilePage, ApiError> {
        let limit = limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(ApiError::BadRequest(format!(
                "limit must be between 1 and {MAX_PAGE}, got {limit}"
            )));
        }
        let after = match cursor.map(str::trim).filter(|c| !c.is_empty()) {
            None => None,
            Some(c) => Some(
                Cursor::decode(c)
                    .filter(|c| c.owner == owner_hash(owner))
                    .ok_or_else(|| {
                        ApiError::BadRequest(
                            "this cursor is not one list_files returned to you: \
                             pass next_cursor exactly, or leave it out for the first page"
                                .into(),
                        )
                    })?,
            ),
        };
        let page = self
            .records()
            .page(owner, limit, after.as_ref(), now_unix())
            .await?;
        let files = self
            .refresh(page.records)
            .await?
            .into_iter()
            .map(|r| FileListing {
                file_id: r.file.id.to_string(),
                filename: r.file.filename,
                size: r.file.size,
                sha256: r.file.sha256,
                content_type: r.file.content_type,
                state: if r.ready {
                    FileState::Ready
                } else {
                    FileState::Pending
                },
                created_at: rfc3339(r.created_ms / 1000),
                expires_at: rfc3339(r.expires_at),
            })
            .collect();
        Ok(FilePage {
            files,
            next_cursor: page.next.map(|c| c.encode()),
        })
    }
}

/// The refusal of a file of `size` bytes beside `records` (an owner's
/// pending files, some perhaps found ready), which leave no room under
/// `caps`: which limit, and when the oldest pending file expires.
fn over_caps(caps: PendingCaps, records: &[FileRecord], size: u64, now: i64) -> ApiError {
    let pending: Vec<&FileRecord> = records.iter().filter(|r| !r.ready).collect();
    let files = pending.len() as u64;
    let bytes = pending
        .iter()
        .map(|r| r.file.size)
        .fold(0u64, u64::saturating_add);
    let next_expiry = pending
        .iter()
        .map(|r| r.expires_at)
        .min()
        .unwrap_or(now + 60);
    let retry_after = u64::try_from(next_expiry - now).unwrap_or(1).max(1);
    ApiError::TooManyRequests {
        message: if files >= caps.files {
            format!(
                "you have {files} files waiting for their upload (the limit is {}): nothing \
                 was issued; upload them, or wait until the oldest expires at {}",
                caps.files,
                rfc3339(next_expiry)
            )
        } else {
            format!(
                "your pending files already declare {bytes} bytes and this one {size} more \
                 (the limit is {}): nothing was issued; upload them, or wait until the oldest \
                 expires at {}",
                caps.bytes,
                rfc3339(next_expiry)
            )
        },
        retry_after,
    }
}
