//! What a user's files take, and admission under the caps in one write of
//! the single writer.

use rusqlite::params;

use super::*;
use crate::records::usage::{Admission, PendingCaps, Usage};

#[async_trait::async_trait]
impl Usage for SqliteRecords {
    /// The count and the insert in one write of the writer thread, the only
    /// writer: concurrent issues cannot pass a cap together.
    async fn put_within(
        &self,
        record: &FileRecord,
        caps: PendingCaps,
        now: i64,
    ) -> Result<Option<Pending>, RecordError> {
        let record = record.clone();
        self.db
            .write(move |c| {
                let owner = owner_hash(&record.file.owner);
                let mut pending = totals(c, &owner, now, caps.files)?;
                if caps.stored.is_some() {
                    pending.stored = usage(c, &owner)?;
                }
                if !caps.admit(pending, record.file.size) {
                    return Ok(Some(pending));
                }
                insert(c, &record).map(|()| None)
            })
            .await
    }

    /// The count and every write in one step of the single writer:
    /// batches issued at the same moment can never together pass a cap.
    async fn put_all_within(
        &self,
        batch: &Admission<'_>,
        caps: PendingCaps,
        now: i64,
    ) -> Result<Option<Pending>, RecordError> {
        let Some(owner) = batch.owner().map(owner_hash) else {
            return Ok(None);
        };
        let (records, sent) = (batch.records.to_vec(), batch.sent);
        self.db
            .write(move |c| {
                let mut pending = totals(c, &owner, now, caps.files)?;
                if caps.stored.is_some() {
                    pending.stored = usage(c, &owner)?;
                }
                let batch = Admission {
                    records: &records,
                    sent,
                };
                if !batch.fits(caps, pending) {
                    return Ok(Some(pending));
                }
                for record in &records {
                    insert(c, record)?;
                }
                Ok(None)
            })
            .await
    }

    async fn pending(
        &self,
        owner: &str,
        now: i64,
        at_most: u64,
    ) -> Result<Vec<FileRecord>, RecordError> {
        let owner = owner_hash(owner);
        self.db
            .read(move |c| {
                let mut stmt = c.prepare_cached(PENDING)?;
                rows(&mut stmt, params![owner, now, at_most as i64])
            })
            .await
    }

    async fn pending_totals(
        &self,
        owner: &str,
        now: i64,
        at_most: u64,
    ) -> Result<Pending, RecordError> {
        let owner = owner_hash(owner);
        self.db.read(move |c| totals(c, &owner, now, at_most)).await
    }

    /// The running figure of [`ADD_USAGE`]: records expired but not yet
    /// swept (at most a minute) still count.
    async fn stored_bytes(&self, owner: &str, _now: i64) -> Result<u64, RecordError> {
        let owner = owner_hash(owner);
        self.db.read(move |c| usage(c, &owner)).await
    }
}
