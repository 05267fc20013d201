//! Files' records: put once, found, paged newest first, deleted to a
//! tombstone, marked ready.

use rusqlite::{OptionalExtension as _, params};

use super::*;
use crate::records::files::FileRecords;
use crate::records::record::{Cursor, Page};

#[async_trait::async_trait]
impl FileRecords for SqliteRecords {
    async fn put(&self, record: &FileRecord) -> Result<(), RecordError> {
        let record = record.clone();
        self.db.write(move |c| insert(c, &record)).await
    }

    async fn get(&self, owner: &str, id: &FileId) -> Result<Option<FileRecord>, RecordError> {
        let record = self.find(id).await?;
        Ok(record.filter(|r| r.file.owner == owner))
    }

    async fn find(&self, id: &FileId) -> Result<Option<FileRecord>, RecordError> {
        let (seq, id) = (id.sequence(), id.to_string());
        let found = self
            .db
            .read(move |c| {
                c.prepare_cached(
                    "SELECT record, ready, proof, scan FROM files WHERE seq = ?1 AND file_id = ?2",
                )?
                .query_row(params![seq, id], row)
                .optional()
            })
            .await?;
        Ok(found.and_then(record_of))
    }

    async fn page(
        &self,
        owner: &str,
        limit: usize,
        after: Option<&Cursor>,
        now: i64,
    ) -> Result<Page, RecordError> {
        let hash = owner_hash(owner);
        let (created, id) = match after {
            Some(c) => (c.created_ms, c.file_id.clone()),
            None => (i64::MAX, String::new()),
        };
        let want = limit as i64 + 1;
        let owner_key = hash.clone();
        let mut records = self
            .db
            .read(move |c| {
                let mut stmt = c.prepare_cached(PAGE)?;
                rows(&mut stmt, params![owner_key, now, created, id, want])
            })
            .await?;
        let next = if records.len() > limit {
            records.truncate(limit);
            records.last().map(|r| Cursor {
                created_ms: r.created_ms,
                file_id: r.file.id.to_string(),
            })
        } else {
            None
        };
        Ok(Page { records, next })
    }

    async fn find_ready(
        &self,
        owner: &str,
        size: u64,
        sha256: Sha256,
        now: i64,
    ) -> Result<Option<FileRecord>, RecordError> {
        let (owner, hex, size) = (owner_hash(owner), sha256.to_hex(), size as i64);
        let mut found = self
            .db
            .read(move |c| {
                let mut stmt = c.prepare_cached(READY_BY_DIGEST)?;
                rows(&mut stmt, params![owner, hex, size, now])
            })
            .await?;
        Ok(found.pop())
    }

    async fn delete(&self, owner: &str, id: &FileId) -> Result<Option<FileRecord>, RecordError> {
        let (hash, seq, id) = (owner_hash(owner), id.sequence(), id.to_string());
        let events = self.events;
        let found = self
            .db
            .write(move |c| {
                let found = c
                    .prepare_cached(
                        "SELECT record, ready, proof, scan, expires_at, size FROM files
                         WHERE seq = ?1 AND file_id = ?2 AND owner = ?3",
                    )?
                    .query_row(params![seq, id, hash], |r| {
                        Ok((row(r)?, r.get::<_, i64>(4)?, r.get::<_, i64>(5)?))
                    })
                    .optional()?;
                let Some((found, expires_at, size)) = found else {
                    return Ok(None);
                };
                c.prepare_cached("DELETE FROM files WHERE seq = ?1 AND file_id = ?2")?
                    .execute(params![seq, id])?;
                c.prepare_cached("UPDATE usage SET bytes = MAX(bytes - ?2, 0) WHERE owner = ?1")?
                    .execute(params![hash, size])?;
                c.prepare_cached(
                    "INSERT OR REPLACE INTO deleted (file_id, expires_at, record) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![id, expires_at, found.0])?;
                if events {
                    report(c, EventType::Deleted, &found.0)?;
                }
                Ok(Some(found))
            })
            .await?;
        Ok(found.and_then(record_of))
    }

    async fn deleted(&self, id: &FileId) -> Result<Option<FileRecord>, RecordError> {
        let id = id.to_string();
        let found: Option<String> = self
            .db
            .read(move |c| {
                c.prepare_cached("SELECT record FROM deleted WHERE file_id = ?1")?
                    .query_row([id], |r| r.get(0))
                    .optional()
            })
            .await?;
        Ok(found.and_then(|json| FileRecord::from_json(&json, false, None)))
    }

    async fn declare(
        &self,
        owner: &str,
        id: &FileId,
        sha256: Sha256,
    ) -> Result<Option<FileRecord>, RecordError> {
        let (hash, seq, file_id) = (owner_hash(owner), id.sequence(), id.to_string());
        let (to_come, hex) = (Sha256::TO_COME.to_hex(), sha256.to_hex());
        self.db
            .write(move |c| {
                // Only a digest still to come: one declared stands.
                c.prepare_cached(
                    "UPDATE files SET record = json_set(record, '$.sha256', ?4)
                     WHERE seq = ?1 AND file_id = ?2 AND owner = ?3
                       AND json_extract(record, '$.sha256') = ?5",
                )?
                .execute(params![seq, file_id, hash, hex, to_come])
                .map(drop)
            })
            .await?;
        self.get(owner, id).await
    }

    async fn mark_ready(&self, owner: &str, id: &FileId) -> Result<(), RecordError> {
        let (owner, seq, id) = (owner_hash(owner), id.sequence(), id.to_string());
        let events = self.events;
        self.db
            .write(move |c| {
                // Only a file turning ready now: one event per file.
                let turned: Option<String> = c
                    .prepare_cached(
                        "UPDATE files SET ready = 1
                         WHERE seq = ?1 AND file_id = ?2 AND owner = ?3 AND ready = 0
                         RETURNING record",
                    )?
                    .query_row(params![seq, id, owner], |r| r.get(0))
                    .optional()?;
                match turned {
                    Some(json) if events => report(c, EventType::Ready, &json),
                    _ => Ok(()),
                }
            })
            .await
    }

    async fn note_scan(
        &self,
        owner: &str,
        id: &FileId,
        note: &ScanNote,
    ) -> Result<(), RecordError> {
        let (owner, seq, id) = (owner_hash(owner), id.sequence(), id.to_string());
        let (json, first) = (note.to_json(), note.verdict.is_none());
        // A refused file is `ready = 2`: neither pending (it holds no
        // place among the owner's pending files) nor ready.
        let refused = note.verdict.as_ref().is_some_and(|v| !v.passes());
        self.db
            .write(move |c| {
                c.prepare_cached(
                    "UPDATE files SET scan = ?4, ready = CASE WHEN ?6 THEN 2 ELSE ready END
                     WHERE seq = ?1 AND file_id = ?2 AND owner = ?3 AND ready = 0
                       AND (?5 = 0 OR scan IS NULL)",
                )?
                .execute(params![seq, id, owner, json, first, refused])
                .map(drop)
            })
            .await
    }
}
