//! Deleting a file, in this order: which file (a handle, verified, or one
//! of the caller's file ids, as everywhere) → its record replaced by a
//! tombstone in one write of the record store (from then on its handle
//! answers expired and its links the uniform 404, on every replica, and no
//! start of a page can write its record again) → its upload in parts
//! aborted and its bytes purged → the answer. A second delete finds the
//! tombstone, purges again (so a purge that failed the first time is done
//! by the next) and answers the same. A transfer under way loses: bytes that
//! arrive for a deleted file are purged when they would turn it ready
//! (`Files::file_stored`), and a download through sluice is cut before its
//! last chunk (`crate::service::downloads::Downloads::unless_deleted`).

use super::Files;
use serde::Serialize;

use crate::auth::{Caller, Scope};
use crate::error::Error;
use crate::file::FileId;
use crate::records::FileRecord;

/// What `delete_file` answers, the first time and every time after (the
/// fields say what they are: each description costs every conversation
/// the bytes of `tools/list`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DeletedFile {
    #[allow(missing_docs)]
    pub file_id: String,
    #[allow(missing_docs)]
    pub filename: String,
    #[allow(missing_docs)]
    pub size: u64,
    /// Always true: its bytes, handle and links are gone.
    pub deleted: bool,
}

impl Files {
    /// Deletes `file` (a handle, or one of the caller's file ids): the
    /// caller's own, or, by its handle, another user's for a caller with
    /// `files:delete`. The audit line names who deleted it.
    pub async fn delete_file(&self, caller: &Caller, file: &str) -> Result<DeletedFile, Error> {
        let file = file.trim();
        let gone = match FileId::parse(file) {
            Some(id) => self.delete_id(caller, &id).await?,
            None => self.delete_handle(caller, file).await?,
        };
        self.custody.purge(&gone.file).await?;
        Ok(DeletedFile {
            file_id: gone.file.id.to_string(),
            filename: gone.file.filename,
            size: gone.file.size,
            deleted: true,
        })
    }

    /// File `id` of the caller's, deleted now or before.
    async fn delete_id(&self, caller: &Caller, id: &FileId) -> Result<FileRecord, Error> {
        let owner = caller.owner.as_str();
        if let Some(record) = self.records.delete(owner, id).await? {
            crate::telemetry::audit_deleted(&record.file, &caller.owner);
            return Ok(record);
        }
        self.records
            .deleted(id)
            .await?
            .filter(|r| r.file.owner == owner)
            .ok_or_else(|| Error::UnknownFile(id.clone()))
    }

    /// The file of handle `handle`, deleted now or before, if `caller` may
    /// delete it: its owner, or a caller granted `files:delete`.
    async fn delete_handle(&self, caller: &Caller, handle: &str) -> Result<FileRecord, Error> {
        let id = self.links().open_handle(handle)?;
        let may = |r: &FileRecord| r.file.owner == caller.owner || caller.has(Scope::FilesDelete);
        if let Some(record) = self.records.find(&id).await? {
            if !may(&record) {
                return Err(Error::OtherUsersHandle);
            }
            if let Some(record) = self.records.delete(&record.file.owner, &id).await? {
                crate::telemetry::audit_deleted(&record.file, &caller.owner);
                return Ok(record);
            }
        }
        match self.records.deleted(&id).await? {
            Some(record) if may(&record) => Ok(record),
            Some(_) => Err(Error::OtherUsersHandle),
            None => Err(Error::HandleExpired),
        }
    }
}
