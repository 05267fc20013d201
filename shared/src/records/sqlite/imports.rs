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

    async fn take_import_turn(
        &self,
        owner: &str,
        holder: &str,
        limit: u32,
        until: i64,
    ) -> Result<Option<u32>, RecordError> {
        let (owner, holder, now) = (owner.to_owned(), holder.to_owned(), crate::time::now_unix());
        self.db
            .write(move |c| {
                let mut take = c.prepare_cached(
                    "INSERT INTO import_turns (owner, n, holder, until) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (owner, n) DO UPDATE SET holder = ?3, until = ?4
                     WHERE import_turns.until < ?5",
                )?;
                for n in 0..limit {
                    if take.execute(params![owner, n, holder, until, now])? == 1 {
                        return Ok(Some(n));
                    }
                }
                Ok(None)
            })
            .await
    }

    async fn give_import_turn(&self, owner: &str, n: u32, holder: &str) -> Result<(), RecordError> {
        let (owner, holder) = (owner.to_owned(), holder.to_owned());
        self.db
            .write(move |c| {
                c.prepare_cached(
                    "DELETE FROM import_turns WHERE owner = ?1 AND n = ?2 AND holder = ?3",
                )?
                .execute(params![owner, n, holder])
                .map(drop)
            })
            .await
    }
}
