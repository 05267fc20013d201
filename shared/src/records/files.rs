//! A file's record: written once when the file is issued, found by its
//! owner or by its id alone, listed a page at a time, marked ready,
//! deleted (leaving a tombstone).

use super::error::RecordError;
use super::record::{Cursor, FileRecord, Page};
use crate::file::FileId;
use crate::sha::Sha256;

/// Files' records.
#[async_trait::async_trait]
pub trait FileRecords: Send + Sync {
    /// Records a newly issued (pending) file, once: a record already there
    /// under its id is kept, and the answer is [`RecordError::AlreadyExists`].
    async fn put(&self, record: &FileRecord) -> Result<(), RecordError>;

    /// File `id` of `owner`, expired or not; `None` if there is none.
    async fn get(&self, owner: &str, id: &FileId) -> Result<Option<FileRecord>, RecordError>;

    /// File `id`, whoever owns it, expired or not (a short token names a
    /// file by its id alone; the record says whose it is); `None` if there
    /// is none. Strongly consistent: a file issued a moment ago is found.
    async fn find(&self, id: &FileId) -> Result<Option<FileRecord>, RecordError>;

    /// Up to `limit` of `owner`'s files unexpired at `now`, newest first,
    /// starting after `after`.
    async fn page(
        &self,
        owner: &str,
        limit: usize,
        after: Option<&Cursor>,
        now: i64,
    ) -> Result<Page, RecordError>;

    /// The latest-expiring of `owner`'s files unexpired at `now` that is
    /// ready and declares `size` bytes of digest `sha256`, if any: found
    /// through an index by owner and digest, never a walk of the owner's
    /// files. Only ever the owner's own: whether another user holds the
    /// same bytes is never asked.
    async fn find_ready(
        &self,
        owner: &str,
        size: u64,
        sha256: Sha256,
        now: i64,
    ) -> Result<Option<FileRecord>, RecordError>;

    /// Deletes file `id` of `owner`: its record is replaced, in one write,
    /// by a tombstone kept until the record would have expired, so that no
    /// record is ever written under its id again (a page's start answers
    /// [`RecordError::AlreadyExists`]) and a second delete finds what the
    /// first deleted ([`FileRecords::deleted`]). What it declared comes off
    /// the owner's usage. The record deleted; `None`, and nothing written,
    /// if `owner` has no record `id` (another's, none, or deleted already).
    async fn delete(&self, owner: &str, id: &FileId) -> Result<Option<FileRecord>, RecordError>;

    /// The record of file `id` as it was when it was deleted, whoever owns
    /// it, until it would have expired; `None` if it was not deleted.
    async fn deleted(&self, id: &FileId) -> Result<Option<FileRecord>, RecordError>;

    /// Declares `sha256` the digest of file `id` of `owner`, issued with
    /// its digest to come ([`crate::Sha256::TO_COME`]: a person's page that
    /// hashes while it sends): written once, in one conditional write, and
    /// the record then pins it as any other does. The record as it stands
    /// after: the digest declared now, or the one declared before (the
    /// caller compares); `None` if `owner` has no record `id`.
    async fn declare(
        &self,
        owner: &str,
        id: &FileId,
        sha256: Sha256,
    ) -> Result<Option<FileRecord>, RecordError>;

    /// Marks file `id` of `owner` as uploaded.
    async fn mark_ready(&self, owner: &str, id: &FileId) -> Result<(), RecordError>;

    /// Notes where file `id` of `owner`'s malware scan stands, while it is
    /// not ready: a note without a verdict (its bytes found stored) only
    /// where none is kept yet, so the first finding's time stands; a
    /// verdict over whatever is kept. Nothing is written for a file that
    /// is ready, deleted or another's.
    async fn note_scan(
        &self,
        owner: &str,
        id: &FileId,
        note: &super::record::ScanNote,
    ) -> Result<(), RecordError>;
}
