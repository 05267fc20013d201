//! What a user's files take (pending files and bytes, all bytes), and
//! admitting newly issued files under the caps on them.

pub use crate::caps::PendingCaps;

use super::error::RecordError;
use super::files::FileRecords;
use super::record::FileRecord;

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

/// The caps themselves are a leaf ([`crate::caps`]); how a count of the
/// records is held against them is the records' own.
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

/// [`Usage::put_all_within`] in two steps: the owner's totals
/// counted, then, if the batch fits, its records written. One step only
/// where the caller holds the owner's admission (a lease, a single writer).
pub async fn count_then_put<S: Usage + ?Sized>(
    store: &S,
    batch: &Admission<'_>,
    caps: PendingCaps,
    now: i64,
) -> Result<Option<Pending>, RecordError> {
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

/// The files of one batch to admit together ([`Usage::put_all_within`]).
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

/// What users' files take, and admission under the caps.
#[async_trait::async_trait]
pub trait Usage: FileRecords {
    /// `owner`'s unexpired files still marked pending, counted up to
    /// `at_most` files (a caller checking a cap needs no more).
    async fn pending(
        &self,
        owner: &str,
        now: i64,
        at_most: u64,
    ) -> Result<Vec<FileRecord>, RecordError>;

    /// Writes `record`, a newly issued pending file, if its owner's pending
    /// files (counted as [`Usage::pending_totals`] does, up to
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
    ) -> Result<Option<Pending>, RecordError> {
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
    ) -> Result<Option<Pending>, RecordError> {
        count_then_put(self, batch, caps, now).await
    }

    /// The bytes all of `owner`'s files unexpired at `now` declare, pending
    /// or ready: what [`PendingCaps::stored`] caps. By default a walk
    /// through [`FileRecords::page`], a read of every such record; a store
    /// that keeps a running figure is faster.
    async fn stored_bytes(&self, owner: &str, now: i64) -> Result<u64, RecordError> {
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
    /// default from [`Usage::pending`]; a store that can count is
    /// faster.
    async fn pending_totals(
        &self,
        owner: &str,
        now: i64,
        at_most: u64,
    ) -> Result<Pending, RecordError> {
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
