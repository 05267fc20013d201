//! Batches' records.

use rusqlite::{OptionalExtension as _, params};

use super::*;
use crate::records::KeptAsJson as _;
use crate::records::batches::{Batch, BatchRecords};

#[async_trait::async_trait]
impl BatchRecords for SqliteRecords {
    async fn put_batch(&self, batch: &Batch) -> Result<(), RecordError> {
        let id = batch.key();
        let (expires, json) = (batch.expires_at, batch.to_json());
        self.db
            .write(move |c| {
                c.prepare_cached(
                    "INSERT INTO batches (batch_id, expires_at, batch) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![id, expires, json])
                .map(drop)
            })
            .await
    }

    async fn get_batch(&self, id: &FileId) -> Result<Option<Batch>, RecordError> {
        let key = id.to_string();
        let json: Option<String> = self
            .db
            .read(move |c| {
                c.prepare_cached("SELECT batch FROM batches WHERE batch_id = ?1")?
                    .query_row([key], |r| r.get(0))
                    .optional()
            })
            .await?;
        Ok(json.and_then(|j| Batch::from_json(id, &j)))
    }
}
