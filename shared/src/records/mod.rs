//! File records: what is known about each issued file besides its bytes,
//! kept apart from the bytes (the [`crate::store::ObjectStore`]) so that one
//! user's files are one indexed query, newest first, a page at a time.
//!
//! Two implementations, one contract (`tests/tests/contract.rs`): SQLite in
//! the local data directory ([`SqliteRecords`]), and DynamoDB on Lambda
//! (`sluice_aws::DynamoRecords`).

#[cfg(feature = "local")]
mod sqlite;

#[cfg(feature = "local")]
pub use sqlite::SqliteRecords;

use serde::{Deserialize, Serialize};

use crate::file::{FileId, FileMeta};
use crate::sha::Sha256;
use crate::store::StoreError;

/// One file's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// What the file pins.
    pub file: FileMeta,
    /// When it was issued, in milliseconds since the Unix epoch (so that
    /// files issued within one second still list newest first).
    pub created_ms: i64,
    /// When its handle and record expire.
    pub expires_at: i64,
    /// Whether its bytes are known to have arrived.
    pub ready: bool,
    /// Where the proof that its object is the file declared stands, where
    /// the service proves it by reading (an object joined from parts on S3,
    /// or put to a store that does not check SHA-256): the service's own
    /// words ([`crate::service`]'s `proof`), which a store keeps as they are
    /// and changes only through [`RecordStore::swap_proof`].
    pub proof: Option<String>,
}

/// One page of a user's unexpired files, newest first.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// The records; fewer than the limit only on the last page (or, on
    /// DynamoDB, where expired items were filtered out of a page).
    pub records: Vec<FileRecord>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<Cursor>,
}

/// A user's files still waiting for their bytes, the bytes they declare,
/// and the bytes all the user's files declare.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pending {
    /// Pending files.
    pub files: u64,
    /// Their declared sizes, summed.
    pub bytes: u64,
    /// The declared sizes of all the user's files, pending or ready, not
    /// yet swept: counted only where [`PendingCaps::stored`] is set (else 0).
    pub stored: u64,
}

/// Per-user limits on files waiting for their bytes, and on the bytes a
/// user's files may take in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingCaps {
    /// Pending files one user may have (`SLUICE_MAX_PENDING_FILES`).
    pub files: u64,
    /// Bytes those files may declare in all (`SLUICE_MAX_PENDING_BYTES`).
    pub bytes: u64,
    /// Bytes all of one user's files, pending or ready, may declare
    /// (`SLUICE_MAX_STORED_BYTES_PER_USER`); `None`: no such cap.
    pub stored: Option<u64>,
}

impl PendingCaps {
    /// Whether one more file of `size` bytes fits beside `pending`.
    pub fn admit(&self, pending: Pending, size: u64) -> bool {
        pending.files < self.files
            && pending.bytes.saturating_add(size) <= self.bytes
            && self.stored_admits(pending, size)
    }

    /// Whether one more file of `size` bytes fits under the cap on all of a
    /// user's bytes.
    pub fn stored_admits(&self, pending: Pending, size: u64) -> bool {
        self.stored
            .is_none_or(|cap| pending.stored.saturating_add(size) <= cap)
    }
}

/// [`RecordStore::put_all_within`] in two steps: the owner's totals
/// counted, then, if the batch fits, its records written. One step only
/// where the caller holds the owner's admission (a lease, a single writer).
pub async fn count_then_put<S: RecordStore + ?Sized>(
    store: &S,
    batch: &Admission<'_>,
    caps: PendingCaps,
    now: i64,
) -> Result<Option<Pending>, StoreError> {
    let Some(owner) = batch.owner() else {
        return Ok(None);
    };
    let mut pending = store.pending_totals(owner, now, caps.files).await?;
    if caps.stored.is_some() {
        pending.stored = store.stored_bytes(owner, now).await?;
    }
    if !batch.fits(caps, pending) {
        return Ok(Some(pending));
    }
    // Sixteen writes at a time.
    for chunk in batch.records.chunks(16) {
        let mut writes = Vec::with_capacity(chunk.len());
        for record in chunk {
            writes.push(store.put(record));
        }
        futures_util::future::try_join_all(writes).await?;
    }
    Ok(None)
}

/// The files of one batch to admit together ([`RecordStore::put_all_within`]).
#[derive(Debug, Clone, Copy)]
pub struct Admission<'a> {
    /// Every record to write, pending, of one owner.
    pub records: &'a [FileRecord],
    /// How many of them will be sent (the rest are copies of bytes the
    /// owner stored already), and the bytes those declare.
    pub sent: (u64, u64),
}

impl Admission<'_> {
    /// Whose files these are (`None`: an empty batch, admitted at once).
    pub fn owner(&self) -> Option<&str> {
        self.records.first().map(|r| r.file.owner.as_str())
    }

    /// Whether the batch fits under `caps` beside `pending`: the files to
    /// send under the caps on pending files and bytes, every file's bytes
    /// (a copy takes room in the store as much as bytes sent) under the cap
    /// on all of one user's bytes.
    pub fn fits(&self, caps: PendingCaps, pending: Pending) -> bool {
        let all = self
            .records
            .iter()
            .map(|r| r.file.size)
            .fold(0u64, u64::saturating_add);
        pending.files.saturating_add(self.sent.0) <= caps.files
            && pending.bytes.saturating_add(self.sent.1) <= caps.bytes
            && caps
                .stored
                .is_none_or(|cap| pending.stored.saturating_add(all) <= cap)
    }
}

/// Where a page starts: after the file issued at `created_ms` (milliseconds)
/// with id `file_id`. The service puts it on the wire, tied to its owner
/// (`service::files`); the stores only read and write these two fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The last record's issue time.
    pub created_ms: i64,
    /// The last record's id.
    pub file_id: String,
}

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

impl Batch {
    /// The batch's JSON, as both backends keep it (the id is its key).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a batch serializes")
    }

    /// Batch `id` from its JSON; `None` if this version cannot read it.
    pub fn from_json(id: &FileId, json: &str) -> Option<Self> {
        let mut batch: Self = serde_json::from_str(json).ok()?;
        batch.id = Some(id.clone());
        Some(batch)
    }
}

/// A record as stored: the same JSON on both backends.
#[derive(Serialize, Deserialize)]
pub(crate) struct Stored {
    file_id: String,
    owner: String,
    filename: String,
    content_type: String,
    size: u64,
    sha256: Sha256,
    created_ms: i64,
    expires_at: i64,
}

impl FileRecord {
    /// The record of `file`, issued now, pending until its bytes arrive.
    pub fn issued(file: &FileMeta, expires_at: i64) -> Self {
        Self {
            file: file.clone(),
            created_ms: crate::time::now_millis(),
            expires_at,
            ready: false,
            proof: None,
        }
    }

    /// The record's JSON, as both backends keep it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&Stored {
            file_id: self.file.id.to_string(),
            owner: self.file.owner.clone(),
            filename: self.file.filename.clone(),
            content_type: self.file.content_type.clone(),
            size: self.file.size,
            sha256: self.file.sha256,
            created_ms: self.created_ms,
            expires_at: self.expires_at,
        })
        .expect("a record serializes")
    }

    /// A record from its JSON, its ready flag and its proof; `None` if this
    /// version cannot read it (skipped, not fatal).
    pub fn from_json(json: &str, ready: bool, proof: Option<String>) -> Option<Self> {
        let s: Stored = serde_json::from_str(json).ok()?;
        Some(Self {
            file: FileMeta {
                id: FileId::parse(&s.file_id)?,
                owner: s.owner,
                filename: s.filename,
                content_type: s.content_type,
                size: s.size,
                sha256: s.sha256,
            },
            created_ms: s.created_ms,
            expires_at: s.expires_at,
            ready,
            proof,
        })
    }
}

/// Where file records live.
#[async_trait::async_trait]
pub trait RecordStore: Send + Sync + std::fmt::Debug {
    /// The outbox of events this store keeps, if it keeps one (webhooks
    /// are on): it then writes `file.ready`, `file.deleted` and
    /// `file.expired` in the transaction of the change each reports, and
    /// takes the service's other events ([`crate::events::Outbox::append`]).
    fn outbox(&self) -> Option<&dyn crate::events::Outbox> {
        None
    }

    /// Records a newly issued (pending) file, once: a record already there
    /// under its id is kept, and the answer is [`StoreError::AlreadyExists`].
    async fn put(&self, record: &FileRecord) -> Result<(), StoreError>;

    /// File `id` of `owner`, expired or not; `None` if there is none.
    async fn get(&self, owner: &str, id: &FileId) -> Result<Option<FileRecord>, StoreError>;

    /// File `id`, whoever owns it, expired or not (a short token names a
    /// file by its id alone; the record says whose it is); `None` if there
    /// is none. Strongly consistent: a file issued a moment ago is found.
    async fn find(&self, id: &FileId) -> Result<Option<FileRecord>, StoreError>;

    /// Up to `limit` of `owner`'s files unexpired at `now`, newest first,
    /// starting after `after`.
    async fn page(
        &self,
        owner: &str,
        limit: usize,
        after: Option<&Cursor>,
        now: i64,
    ) -> Result<Page, StoreError>;

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
    ) -> Result<Option<FileRecord>, StoreError>;

    /// Records `batch`, once (its id is fresh).
    async fn put_batch(&self, batch: &Batch) -> Result<(), StoreError>;

    /// Batch `id`, expired or not; `None` if there is none.
    async fn get_batch(&self, id: &FileId) -> Result<Option<Batch>, StoreError>;

    /// Deletes file `id` of `owner`: its record is replaced, in one write,
    /// by a tombstone kept until the record would have expired, so that no
    /// record is ever written under its id again (a page's start answers
    /// [`StoreError::AlreadyExists`]) and a second delete finds what the
    /// first deleted ([`RecordStore::deleted`]). What it declared comes off
    /// the owner's usage. The record deleted; `None`, and nothing written,
    /// if `owner` has no record `id` (another's, none, or deleted already).
    async fn delete(&self, owner: &str, id: &FileId) -> Result<Option<FileRecord>, StoreError>;

    /// The record of file `id` as it was when it was deleted, whoever owns
    /// it, until it would have expired; `None` if it was not deleted.
    async fn deleted(&self, id: &FileId) -> Result<Option<FileRecord>, StoreError>;

    /// Marks file `id` of `owner` as uploaded.
    async fn mark_ready(&self, owner: &str, id: &FileId) -> Result<(), StoreError>;

    /// Replaces the proof of file `id` of `owner` with `to` if it is `from`
    /// now (`None`: no proof), in one conditional write: `false`, and
    /// nothing written, if it is not (another completion moved it, on any
    /// replica) or there is no such record.
    async fn swap_proof(
        &self,
        owner: &str,
        id: &FileId,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<bool, StoreError>;

    /// `owner`'s unexpired files still marked pending, counted up to
    /// `at_most` files (a caller checking a cap needs no more).
    async fn pending(
        &self,
        owner: &str,
        now: i64,
        at_most: u64,
    ) -> Result<Vec<FileRecord>, StoreError>;

    /// Writes `record`, a newly issued pending file, if its owner's pending
    /// files (counted as [`RecordStore::pending_totals`] does, up to
    /// `caps.files`) leave room for it under `caps`; otherwise writes
    /// nothing and answers those totals. By default the count and the write
    /// are two steps, so issues running at the same moment may together pass
    /// a cap by their number (the per-user issuing rate bounds how many); a
    /// store with a single writer does both at once.
    async fn put_within(
        &self,
        record: &FileRecord,
        caps: PendingCaps,
        now: i64,
    ) -> Result<Option<Pending>, StoreError> {
        let mut pending = self
            .pending_totals(&record.file.owner, now, caps.files)
            .await?;
        if caps.stored.is_some() {
            pending.stored = self.stored_bytes(&record.file.owner, now).await?;
        }
        if !caps.admit(pending, record.file.size) {
            return Ok(Some(pending));
        }
        self.put(record).await.map(|()| None)
    }

    /// Writes every record of `batch` (newly issued files of one owner,
    /// all pending) if they fit under `caps` beside the owner's files:
    /// `batch.sent` of them as pending files and bytes, every one of them
    /// under the cap on all the owner's bytes. Otherwise writes nothing and
    /// answers the owner's totals. By default the count and the writes are
    /// two steps (concurrent batches may together pass a cap; the issuing
    /// rate, which counts files, bounds by how much); a store with a single
    /// writer does it in one.
    async fn put_all_within(
        &self,
        batch: &Admission<'_>,
        caps: PendingCaps,
        now: i64,
    ) -> Result<Option<Pending>, StoreError> {
        count_then_put(self, batch, caps, now).await
    }

    /// The bytes all of `owner`'s files unexpired at `now` declare, pending
    /// or ready: what [`PendingCaps::stored`] caps. By default a walk
    /// through [`RecordStore::page`], a read of every such record; a store
    /// that keeps a running figure is faster.
    async fn stored_bytes(&self, owner: &str, now: i64) -> Result<u64, StoreError> {
        let (mut total, mut after) = (0u64, None);
        loop {
            let page = self.page(owner, 1000, after.as_ref(), now).await?;
            total = page
                .records
                .iter()
                .map(|r| r.file.size)
                .fold(total, u64::saturating_add);
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(total),
            }
        }
    }

    /// How many of `owner`'s unexpired files are marked pending, and the
    /// bytes they declare, counting at most `at_most` files: what the caps
    /// check on every issue. Fewer than `at_most` files means the totals are
    /// exact; a caller checking a cap of `at_most` files needs no more, and
    /// its cost stays bounded by the cap however many files are pending. By
    /// default from [`RecordStore::pending`]; a store that can count is
    /// faster.
    async fn pending_totals(
        &self,
        owner: &str,
        now: i64,
        at_most: u64,
    ) -> Result<Pending, StoreError> {
        let pending = self.pending(owner, now, at_most).await?;
        Ok(Pending {
            files: pending.len() as u64,
            bytes: pending
                .iter()
                .map(|r| r.file.size)
                .fold(0, u64::saturating_add),
            stored: 0,
        })
    }
}
