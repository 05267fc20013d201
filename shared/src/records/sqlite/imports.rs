//! Imports' records.

use rusqlite::{OptionalExtension as _, params};

use super::*;
use crate::records::KeptAsJson as _;
use crate::records::imports::{ImportRecord, ImportRecords};

#[async_trait::async_trait]
impl ImportRecords for SqliteRecords {
    async fn put_import(&self, record: &ImportRecord) -> Result<(), RecordError> {
        let id = record.key();
        let (expires, json) = (record.expires_at, record.to_json());
        self.db
            .write(move |c| {
                c.prepare_cached(
                    "INSERT INTO imports (import_id, expires_at, import) VALUES (?1, ?2, ?3)
                     ON CONFLICT (import_id) DO UPDATE SET expires_at = ?2, import = ?3",
                )?
                .execute(params![id, expires, json])
                .map(drop)
            })
            .await
    }

    async fn get_import(&self, id: &FileId) -> Result<Option<ImportRecord>, RecordError> {
        let key = id.to_string();
        let json: Option<String> = self
            .db
            .read(move |c| {
                c.prepare_cached("SELECT import FROM imports WHERE import_id = ?1")?
                    .query_row([key], |r| r.get(0))
                    .optional()
            })
            .await?;
        Ok(json.and_then(|j| ImportRecord::from_json(id, &j)))
    }
}
