//! File records in an SQLite file of the data directory: one table, keyed by
//! file id (in the order ids are made), indexed by owner and issue time for
//! pages newest first, and a partial index of pending files for the
//! per-user caps.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension as _, params};

use super::{Admission, Batch, Cursor, FileRecord, Page, Pending, PendingCaps, RecordStore};
use crate::events::{Delivery, Event, EventType, Outbox, Subscriber};
use crate::file::{FileId, owner_hash};
use crate::sha::Sha256;
use crate::sqlite::Db;
use crate::store::StoreError;

/// One table, keyed by file id in the order ids are made (`seq`, the id's
/// first 48 bits: [`FileId::sequence`]), so every new record goes at the
/// table's end and a record is found by its id alone (a short token names
/// nothing else); indexed by owner and issue time and (partially) by
/// pending files. The key replaced `(owner, file_id)` and an index by id,
/// two places in the file a random key wrote anywhere (each commit wrote a
/// page per record for each). The pending index carries each
/// file's expiry and size, so the count on every issue reads the index
/// alone and only the owner's pending files; it replaced `files_pending`,
/// which made SQLite walk every record of the owner, ready ones included.
/// The queries on it name it (`INDEXED BY`): without statistics SQLite
/// preferred the time index for the oldest pending files, which walks the
/// ready ones too. A deleted file's record moves to `deleted` until it
/// would have expired, and a trigger refuses a record under its id (as a
/// constraint, which the store answers as [`StoreError::AlreadyExists`]).
/// With webhooks on, `outbox` takes each event in the transaction of its
/// change, `deliveries` one row per event and endpoint still to send, and
/// `fanned_out` how far each endpoint's deliveries were made.
/// NORMAL: a commit survives a process crash, and may be
/// lost only to a power cut, where the upload it describes is lost as well.
const TABLES: &str = "CREATE TABLE IF NOT EXISTS files (
                 seq INTEGER NOT NULL,
                 file_id TEXT NOT NULL,
                 owner TEXT NOT NULL,
                 created_ms INTEGER NOT NULL,
                 expires_at INTEGER NOT NULL,
                 size INTEGER NOT NULL,
                 ready INTEGER NOT NULL DEFAULT 0,
                 record TEXT NOT NULL,
                 proof TEXT,
                 PRIMARY KEY (seq, file_id)
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS files_by_time ON files (owner, created_ms DESC, file_id DESC);
             CREATE INDEX IF NOT EXISTS files_by_expiry ON files (expires_at);
             CREATE INDEX IF NOT EXISTS files_pending_sizes
                 ON files (owner, created_ms, expires_at, size, ready) WHERE ready = 0;
             CREATE INDEX IF NOT EXISTS files_by_digest
                 ON files (owner, json_extract(record, '$.sha256'), size) WHERE ready = 1;
             CREATE TABLE IF NOT EXISTS batches (
                 batch_id TEXT PRIMARY KEY,
                 expires_at INTEGER NOT NULL,
                 batch TEXT NOT NULL
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS batches_by_expiry ON batches (expires_at);
             CREATE TABLE IF NOT EXISTS deleted (
                 file_id TEXT PRIMARY KEY,
                 expires_at INTEGER NOT NULL,
                 record TEXT NOT NULL
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS deleted_by_expiry ON deleted (expires_at);
             CREATE TRIGGER IF NOT EXISTS deleted_stays_deleted BEFORE INSERT ON files
                 WHEN EXISTS (SELECT 1 FROM deleted WHERE file_id = NEW.file_id)
                 BEGIN SELECT RAISE(ABORT, 'this file was deleted'); END;
             CREATE TABLE IF NOT EXISTS outbox (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 event_id TEXT NOT NULL,
                 type TEXT NOT NULL,
                 body TEXT NOT NULL,
                 created_ms INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS deliveries (
                 seq INTEGER NOT NULL,
                 endpoint TEXT NOT NULL,
                 attempts INTEGER NOT NULL DEFAULT 0,
                 next_ms INTEGER NOT NULL,
                 PRIMARY KEY (seq, endpoint)
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (endpoint, next_ms, seq);
             CREATE TABLE IF NOT EXISTS fanned_out (
                 endpoint TEXT PRIMARY KEY,
                 seq INTEGER NOT NULL
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS usage (
                 owner TEXT PRIMARY KEY,
                 bytes INTEGER NOT NULL
             ) WITHOUT ROWID;";

/// Rebuilds every owner's running byte count from the records (see
/// [`ADD_USAGE`]), on every open.
const REBUILD_USAGE: &str = "BEGIN IMMEDIATE;
             DELETE FROM usage;
             INSERT INTO usage (owner, bytes) SELECT owner, SUM(size) FROM files GROUP BY owner;
             COMMIT;";

/// Records that expired before `?1`, found by the expiry index: a scan of
/// the table would hold the write lock, and every issue, for as long as it
/// reads every record.
const SWEEP: &str = "DELETE FROM files WHERE expires_at < ?1";

/// What the sweep frees per owner, read before it deletes.
const FREED: &str = "SELECT owner, SUM(size) FROM files WHERE expires_at < ?1 GROUP BY owner";

/// `usage` keeps, per owner, the bytes all their records declare: the cap
/// on one user's bytes reads one row, not every record of the owner. Every
/// insert adds to it, the sweep takes off what it deletes in the same
/// transaction, and every open rebuilds it from the records (so a figure
/// can never drift for longer than a restart).
const ADD_USAGE: &str = "INSERT INTO usage (owner, bytes) VALUES (?1, ?2)
         ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes";

/// What an owner's records declare in all.
const USAGE: &str = "SELECT COALESCE((SELECT bytes FROM usage WHERE owner = ?1), 0)";

/// The caller's pending files and bytes, counting at most `?3` files.
const TOTALS: &str = "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM (
         SELECT size FROM files INDEXED BY files_pending_sizes
         WHERE owner = ?1 AND ready = 0 AND expires_at > ?2
         LIMIT ?3)";

/// A page of the caller's files, newest first, after a cursor (the first
/// page: after `i64::MAX`). The row value lets SQLite seek to the cursor in
/// the time index; the `OR` with a first-page flag it replaced made it walk
/// every earlier page's entries first (page 60 of 3,000 files took 30,217
/// steps, the first page 626).
const PAGE: &str = "SELECT record, ready, proof FROM files
         WHERE owner = ?1 AND expires_at > ?2 AND (created_ms, file_id) < (?3, ?4)
         ORDER BY created_ms DESC, file_id DESC LIMIT ?5";

/// The caller's ready file of a digest and size that expires last, found
/// by the digest index (an index on the record's own `sha256`, so a data
/// directory made before it needs no new column).
const READY_BY_DIGEST: &str = "SELECT record, ready, proof FROM files INDEXED BY files_by_digest
         WHERE owner = ?1 AND json_extract(record, '$.sha256') = ?2 AND size = ?3
           AND ready = 1 AND expires_at > ?4
         ORDER BY expires_at DESC LIMIT 1";

/// The caller's oldest pending files.
const PENDING: &str = "SELECT record, ready, proof FROM files INDEXED BY files_pending_sizes
         WHERE owner = ?1 AND ready = 0 AND expires_at > ?2
         ORDER BY created_ms LIMIT ?3";

/// File records in `files.sqlite3`.
#[derive(Debug, Clone)]
pub struct SqliteRecords {
    /// One write on every issue, committed in batches by the writer thread.
    db: Db,
    /// Whether changes write their events to the outbox (webhooks are on).
    events: bool,
}

impl SqliteRecords {
    /// Opens (creating if needed) the records at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Ok(Self {
            db: Db::open(
                path,
                &format!("PRAGMA synchronous = NORMAL; {TABLES} {REBUILD_USAGE}"),
                "sluice-records",
            )?,
            events: false,
        })
    }

    /// These records writing an event to the outbox with each change it
    /// reports, for the webhooks' worker ([`crate::events::Outbox`]).
    pub fn with_events(mut self) -> Self {
        self.events = true;
        self
    }

    /// Which of `ids` (file ids) have a record, blocking: what the local
    /// sweep keeps, whatever its objects' times say (a deduplicated copy
    /// is a hard link, with its original's time).
    pub fn live(&self, ids: &[String]) -> Result<std::collections::HashSet<String>, StoreError> {
        self.db.read_now(|c| {
            let mut stmt =
                c.prepare_cached("SELECT 1 FROM files WHERE seq = ?1 AND file_id = ?2")?;
            let mut live = std::collections::HashSet::new();
            for id in ids {
                let Some(file_id) = FileId::parse(id) else {
                    continue;
                };
                if stmt.exists(params![file_id.sequence(), id])? {
                    live.insert(id.clone());
                }
            }
            Ok(live)
        })
    }

    /// Deletes records that expired before `before`, and takes what they
    /// declared off their owners' usage in the same transaction, then
    /// truncates the write-ahead log (see [`Db::sweep`]); returns how many.
    pub fn sweep(&self, before: i64) -> Result<usize, StoreError> {
        let events = self.events;
        self.db.sweep(|c| {
            let tx =
                rusqlite::Transaction::new_unchecked(c, rusqlite::TransactionBehavior::Immediate)?;
            let expired: Vec<String> = tx
                .prepare_cached("SELECT record FROM files WHERE expires_at < ?1")?
                .query_map([before], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let expired: Vec<FileRecord> = expired
                .iter()
                .filter_map(|json| FileRecord::from_json(json, false, None))
                .collect();
            if events {
                for record in &expired {
                    append(&tx, &Event::about(EventType::Expired, &record.file, None))?;
                }
                // Events every endpoint has been given and no delivery
                // still needs (sent, or given up).
                tx.execute(
                    "DELETE FROM outbox WHERE seq <= (SELECT COALESCE(MIN(seq), 0) FROM fanned_out)
                       AND seq NOT IN (SELECT seq FROM deliveries)",
                    [],
                )?;
            }
            let freed: Vec<(String, i64)> = tx
                .prepare_cached(FREED)?
                .query_map([before], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            for (owner, bytes) in freed {
                tx.prepare_cached("UPDATE usage SET bytes = MAX(bytes - ?2, 0) WHERE owner = ?1")?
                    .execute(params![owner, bytes])?;
            }
            tx.execute("DELETE FROM usage WHERE bytes = 0", [])?;
            let swept = tx.execute(SWEEP, [before])?;
            tx.execute("DELETE FROM batches WHERE expires_at < ?1", [before])?;
            tx.execute("DELETE FROM deleted WHERE expires_at < ?1", [before])?;
            tx.commit()?;
            for record in &expired {
                crate::telemetry::audit(crate::telemetry::Change::Expired, &record.file, None);
            }
            Ok(swept)
        })
    }
}

/// Writes event `kind` about the record `json` to the outbox, in the
/// caller's transaction.
fn report(c: &Connection, kind: EventType, json: &str) -> rusqlite::Result<()> {
    match FileRecord::from_json(json, false, None) {
        Some(record) => append(c, &Event::about(kind, &record.file, None)),
        None => Ok(()),
    }
}

fn append(c: &Connection, event: &Event) -> rusqlite::Result<()> {
    c.prepare_cached(
        "INSERT INTO outbox (event_id, type, body, created_ms) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        event.id,
        event.kind.as_str(),
        event.body(),
        crate::time::now_millis()
    ])
    .map(|_| ())
}

fn insert(c: &Connection, record: &FileRecord) -> rusqlite::Result<()> {
    let owner = owner_hash(&record.file.owner);
    c.prepare_cached(ADD_USAGE)?
        .execute(params![owner, record.file.size as i64])?;
    c.prepare_cached(
        "INSERT INTO files (owner, file_id, created_ms, expires_at, size, ready, record, seq, proof)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        owner,
        record.file.id.to_string(),
        record.created_ms,
        record.expires_at,
        record.file.size as i64,
        record.ready,
        record.to_json(),
        record.file.id.sequence(),
        record.proof
    ])
    .map(|_| ())
}

/// `owner_hash`'s unexpired pending files and their declared bytes, counting
/// at most `at_most` files.
fn totals(c: &Connection, owner_hash: &str, now: i64, at_most: u64) -> rusqlite::Result<Pending> {
    let at_most = i64::try_from(at_most).unwrap_or(i64::MAX);
    c.prepare_cached(TOTALS)?
        .query_row(params![owner_hash, now, at_most], |r| {
            Ok(Pending {
                files: r.get::<_, i64>(0)? as u64,
                bytes: r.get::<_, i64>(1)? as u64,
                stored: 0,
            })
        })
}

/// What `owner_hash`'s records declare in all (see [`ADD_USAGE`]).
fn usage(c: &Connection, owner_hash: &str) -> rusqlite::Result<u64> {
    c.prepare_cached(USAGE)?
        .query_row([owner_hash], |r| r.get::<_, i64>(0))
        .map(|b| u64::try_from(b).unwrap_or(0))
}

/// A record's row: its JSON, ready flag and proof.
fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, bool, Option<String>)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
}

fn rows(
    stmt: &mut rusqlite::Statement<'_>,
    args: impl rusqlite::Params,
) -> rusqlite::Result<Vec<FileRecord>> {
    let found = stmt.query_map(args, row)?;
    let mut out = Vec::new();
    for row in found {
        let (json, ready, proof) = row?;
        if let Some(record) = FileRecord::from_json(&json, ready, proof) {
            out.push(record);
        }
    }
    Ok(out)
}

/// An endpoint's deliveries due, oldest first: read in the index's order
/// and stopped at the limit, however long the backlog.
const DUE: &str = "SELECT d.seq, d.endpoint, d.attempts, o.event_id, o.body
     FROM deliveries d JOIN outbox o ON o.seq = d.seq
     WHERE d.endpoint = ?3 AND d.next_ms <= ?1
     ORDER BY d.next_ms, d.seq LIMIT ?2";

#[async_trait::async_trait]
impl Outbox for SqliteRecords {
    async fn append(&self, event: &Event) -> Result<(), StoreError> {
        let event = event.clone();
        self.db.write(move |c| append(c, &event)).await
    }

    async fn due(
        &self,
        subscriber: &Subscriber,
        now_ms: i64,
        lease_until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        let sub = subscriber.clone();
        self.db
            .write(move |c| {
                let from: i64 = c
                    .prepare_cached("SELECT COALESCE((SELECT seq FROM fanned_out WHERE endpoint = ?1), 0)")?
                    .query_row([&sub.name], |r| r.get(0))?;
                let new: Vec<(i64, String)> = c
                    .prepare_cached("SELECT seq, type FROM outbox WHERE seq > ?1 ORDER BY seq")?
                    .query_map([from], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                if let Some(last) = new.last().map(|(seq, _)| *seq) {
                    for (seq, kind) in new {
                        if EventType::parse(&kind).is_some_and(|k| sub.takes(k)) {
                            c.prepare_cached(
                                "INSERT OR IGNORE INTO deliveries (seq, endpoint, next_ms) VALUES (?1, ?2, ?3)",
                            )?
                            .execute(params![seq, sub.name, now_ms])?;
                        }
                    }
                    c.prepare_cached(
                        "INSERT INTO fanned_out (endpoint, seq) VALUES (?1, ?2)
                         ON CONFLICT (endpoint) DO UPDATE SET seq = excluded.seq",
                    )?
                    .execute(params![sub.name, last])?;
                }
                let due: Vec<Delivery> = c
                    .prepare_cached(DUE)?
                    .query_map(params![now_ms, limit as i64, sub.name], |r| {
                        Ok(Delivery {
                            seq: r.get(0)?,
                            endpoint: r.get(1)?,
                            attempts: r.get(2)?,
                            event_id: r.get(3)?,
                            body: r.get(4)?,
                        })
                    })?
                    .collect::<rusqlite::Result<_>>()?;
                for d in &due {
                    c.prepare_cached("UPDATE deliveries SET next_ms = ?3 WHERE seq = ?1 AND endpoint = ?2")?
                        .execute(params![d.seq, d.endpoint, lease_until_ms])?;
                }
                Ok(due)
            })
            .await
    }

    async fn retain(&self, endpoints: &[String]) -> Result<(), StoreError> {
        let keep = serde_json::to_string(endpoints).expect("names serialize");
        self.db
            .write(move |c| {
                for table in ["deliveries", "fanned_out"] {
                    c.execute(
                        &format!(
                            "DELETE FROM {table} WHERE endpoint NOT IN (SELECT value FROM json_each(?1))"
                        ),
                        [&keep],
                    )?;
                }
                Ok(())
            })
            .await
    }

    async fn finish(&self, seq: i64, endpoint: &str) -> Result<(), StoreError> {
        let endpoint = endpoint.to_owned();
        self.db
            .write(move |c| {
                c.prepare_cached("DELETE FROM deliveries WHERE seq = ?1 AND endpoint = ?2")?
                    .execute(params![seq, endpoint])
                    .map(|_| ())
            })
            .await
    }

    async fn retry(
        &self,
        seq: i64,
        endpoint: &str,
        attempts: u32,
        next_ms: i64,
    ) -> Result<(), StoreError> {
        let endpoint = endpoint.to_owned();
        self.db
            .write(move |c| {
                c.prepare_cached(
                    "UPDATE deliveries SET attempts = ?3, next_ms = ?4 WHERE seq = ?1 AND endpoint = ?2",
                )?
                .execute(params![seq, endpoint, attempts, next_ms])
                .map(|_| ())
            })
            .await
    }
}

#[async_trait::async_trait]
impl RecordStore for SqliteRecords {
    fn outbox(&self) -> Option<&dyn Outbox> {
        self.events.then_some(self as &dyn Outbox)
    }

    async fn put(&self, record: &FileRecord) -> Result<(), StoreError> {
        let record = record.clone();
        self.db.write(move |c| insert(c, &record)).await
    }

    /// The count and the insert in one write of the writer thread, the only
    /// writer: concurrent issues cannot pass a cap together.
    async fn put_within(
        &self,
        record: &FileRecord,
        caps: PendingCaps,
        now: i64,
    ) -> Result<Option<Pending>, StoreError> {
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
    ) -> Result<Option<Pending>, StoreError> {
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

    async fn get(&self, owner: &str, id: &FileId) -> Result<Option<FileRecord>, StoreError> {
        let record = self.find(id).await?;
        Ok(record.filter(|r| r.file.owner == owner))
    }

    async fn find(&self, id: &FileId) -> Result<Option<FileRecord>, StoreError> {
        let (seq, id) = (id.sequence(), id.to_string());
        let found = self
            .db
            .read(move |c| {
                c.prepare_cached(
                    "SELECT record, ready, proof FROM files WHERE seq = ?1 AND file_id = ?2",
                )?
                .query_row(params![seq, id], row)
                .optional()
            })
            .await?;
        Ok(found.and_then(|(json, ready, proof)| FileRecord::from_json(&json, ready, proof)))
    }

    async fn page(
        &self,
        owner: &str,
        limit: usize,
        after: Option<&Cursor>,
        now: i64,
    ) -> Result<Page, StoreError> {
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
    ) -> Result<Option<FileRecord>, StoreError> {
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

    async fn delete(&self, owner: &str, id: &FileId) -> Result<Option<FileRecord>, StoreError> {
        let (hash, seq, id) = (owner_hash(owner), id.sequence(), id.to_string());
        let events = self.events;
        let found = self
            .db
            .write(move |c| {
                let found = c
                    .prepare_cached(
                        "SELECT record, ready, proof, expires_at, size FROM files
                         WHERE seq = ?1 AND file_id = ?2 AND owner = ?3",
                    )?
                    .query_row(params![seq, id, hash], |r| {
                        Ok((row(r)?, r.get::<_, i64>(3)?, r.get::<_, i64>(4)?))
                    })
                    .optional()?;
                let Some(((json, ready, proof), expires_at, size)) = found else {
                    return Ok(None);
                };
                c.prepare_cached("DELETE FROM files WHERE seq = ?1 AND file_id = ?2")?
                    .execute(params![seq, id])?;
                c.prepare_cached("UPDATE usage SET bytes = MAX(bytes - ?2, 0) WHERE owner = ?1")?
                    .execute(params![hash, size])?;
                c.prepare_cached(
                    "INSERT OR REPLACE INTO deleted (file_id, expires_at, record) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![id, expires_at, json])?;
                if events {
                    report(c, EventType::Deleted, &json)?;
                }
                Ok(Some((json, ready, proof)))
            })
            .await?;
        Ok(found.and_then(|(json, ready, proof)| FileRecord::from_json(&json, ready, proof)))
    }

    async fn deleted(&self, id: &FileId) -> Result<Option<FileRecord>, StoreError> {
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

    async fn put_batch(&self, batch: &Batch) -> Result<(), StoreError> {
        let id = batch
            .id
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
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

    async fn get_batch(&self, id: &FileId) -> Result<Option<Batch>, StoreError> {
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

    async fn mark_ready(&self, owner: &str, id: &FileId) -> Result<(), StoreError> {
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

    async fn swap_proof(
        &self,
        owner: &str,
        id: &FileId,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<bool, StoreError> {
        let (owner, seq, id) = (owner_hash(owner), id.sequence(), id.to_string());
        let (from, to) = (from.map(str::to_owned), to.map(str::to_owned));
        self.db
            .write(move |c| {
                c.prepare_cached(
                    "UPDATE files SET proof = ?4
                     WHERE seq = ?1 AND file_id = ?2 AND owner = ?3 AND proof IS ?5",
                )?
                .execute(params![seq, id, owner, to, from])
                .map(|changed| changed == 1)
            })
            .await
    }

    async fn pending(
        &self,
        owner: &str,
        now: i64,
        at_most: u64,
    ) -> Result<Vec<FileRecord>, StoreError> {
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
    ) -> Result<Pending, StoreError> {
        let owner = owner_hash(owner);
        self.db.read(move |c| totals(c, &owner, now, at_most)).await
    }

    /// The running figure of [`ADD_USAGE`]: records expired but not yet
    /// swept (at most a minute) still count.
    async fn stored_bytes(&self, owner: &str, _now: i64) -> Result<u64, StoreError> {
        let owner = owner_hash(owner);
        self.db.read(move |c| usage(c, &owner)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new records file, and a connection of its own to it.
    fn opened() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("files.sqlite3");
        SqliteRecords::open(&path).unwrap();
        let c = Connection::open(&path).unwrap();
        (dir, c)
    }

    /// The steps SQLite takes to run the count of pending files and the
    /// list of the oldest ones for an owner with `ready` ready files and 3
    /// pending ones.
    fn steps_with(ready: usize) -> (i64, i64) {
        let (_dir, c) = opened();
        let now = crate::time::now_unix();
        for i in 0..ready + 3 {
            let mut r = record("alice", 10, now);
            r.ready = i >= 3;
            insert(&c, &r).unwrap();
        }
        let owner = owner_hash("alice");
        let steps = |sql: &str, expect: usize| {
            let mut stmt = c.prepare(sql).unwrap();
            let mut rows = stmt.query(params![owner, now, 100]).unwrap();
            let mut n = 0;
            while let Some(row) = rows.next().unwrap() {
                n += if sql == TOTALS {
                    row.get::<_, i64>(0).unwrap() as usize
                } else {
                    1
                };
            }
            drop(rows);
            assert_eq!(n, expect);
            i64::from(stmt.get_status(rusqlite::StatementStatus::VmStep))
        };
        (steps(TOTALS, 3), steps(PENDING, 3))
    }

    /// A late page of a long listing costs what the first one does: the
    /// query seeks to its cursor instead of walking the pages before it.
    #[test]
    fn a_late_page_does_not_walk_the_earlier_ones() {
        let (_dir, c) = opened();
        let now = crate::time::now_unix();
        let mut oldest = Vec::new();
        for i in 0..3000 {
            let mut r = record("alice", 10, now);
            r.created_ms += i;
            insert(&c, &r).unwrap();
            if i == 50 {
                oldest = vec![r];
            }
        }
        let owner = owner_hash("alice");
        let steps = |created: i64, id: String| {
            let mut stmt = c.prepare(PAGE).unwrap();
            let n = stmt
                .query_map(params![owner, now, created, id, 51], |_| Ok(()))
                .unwrap()
                .count();
            (n, stmt.get_status(rusqlite::StatementStatus::VmStep))
        };
        let (first, first_steps) = steps(i64::MAX, String::new());
        let last = &oldest[0];
        let (late, late_steps) = steps(last.created_ms, last.file.id.to_string());
        assert_eq!((first, late), (51, 50));
        assert!(
            late_steps <= first_steps + 20,
            "{first_steps} -> {late_steps} steps"
        );
    }

    /// A worker's look for deliveries due walks its endpoint's index in
    /// order and stops at the limit: no sort of the whole backlog.
    #[test]
    fn due_deliveries_are_read_in_the_index_order() {
        let (_dir, c) = opened();
        let plan = crate::sqlite::plan(&c, DUE);
        assert!(plan.contains("INDEX deliveries_due"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }

    /// The minute's sweep reads only expired records.
    #[test]
    fn the_sweep_finds_expired_records_by_index() {
        let (_dir, c) = opened();
        let plan = crate::sqlite::plan(&c, SWEEP);
        assert!(plan.contains("INDEX files_by_expiry"), "{plan}");
    }

    /// Counting the pending files (on every issue) and listing them read
    /// the pending files only, however many ready ones the owner has: the
    /// count once walked every record of the owner.
    #[test]
    fn pending_queries_do_not_read_ready_files() {
        let (totals, pending) = steps_with(0);
        let (totals_many, pending_many) = steps_with(3000);
        assert!(totals_many <= totals + 5, "{totals} -> {totals_many} steps");
        assert!(
            pending_many <= pending + 5,
            "{pending} -> {pending_many} steps"
        );
    }
    use crate::file::FileMeta;
    use crate::sha::Sha256;

    fn record(owner: &str, size: u64, now: i64) -> FileRecord {
        FileRecord {
            file: FileMeta {
                id: FileId::random(),
                owner: owner.into(),
                filename: "a.bin".into(),
                content_type: "application/octet-stream".into(),
                size,
                sha256: Sha256::of(b"a"),
            },
            created_ms: now * 1000,
            expires_at: now + 600,
            ready: false,
            proof: None,
        }
    }

    /// The sweep writes a file.expired event for each record it removes, in
    /// its own transaction; each endpoint that takes the type gets one
    /// delivery, leased while it is out, retried when due, and the event
    /// leaves the outbox once every delivery of it has ended.
    #[tokio::test]
    async fn the_sweep_reports_each_expired_file_once_to_each_endpoint() {
        let dir = tempfile::tempdir().unwrap();
        let records = SqliteRecords::open(&dir.path().join("files.sqlite3"))
            .unwrap()
            .with_events();
        let now = crate::time::now_unix();
        let mut gone = record("alice", 10, now);
        gone.expires_at = now - 5;
        let kept = record("alice", 10, now);
        records.put(&gone).await.unwrap();
        records.put(&kept).await.unwrap();
        assert_eq!(records.sweep(now).unwrap(), 1);

        let subs = [
            Subscriber {
                name: "all".into(),
                events: None,
            },
            Subscriber {
                name: "ready-only".into(),
                events: Some(vec![EventType::Ready]),
            },
        ];
        let ms = now * 1000;
        let due = records.due(&subs[0], ms, ms + 30_000, 10).await.unwrap();
        assert_eq!(due.len(), 1, "{due:?}");
        let body: serde_json::Value = serde_json::from_str(&due[0].body).unwrap();
        assert_eq!(body["type"], "file.expired");
        assert_eq!(body["data"]["file_id"], gone.file.id.to_string());
        assert!(
            records
                .due(&subs[1], ms, ms + 30_000, 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Leased: not due again until the lease ends.
        assert!(
            records
                .due(&subs[0], ms + 1, ms + 30_000, 10)
                .await
                .unwrap()
                .is_empty()
        );
        records
            .retry(due[0].seq, "all", 1, ms + 5_000)
            .await
            .unwrap();
        let again = records
            .due(&subs[0], ms + 5_000, ms + 35_000, 10)
            .await
            .unwrap();
        assert_eq!(
            (again.len(), again[0].attempts, &again[0].event_id),
            (1, 1, &due[0].event_id)
        );
        records.finish(again[0].seq, "all").await.unwrap();
        assert!(
            records
                .due(&subs[0], ms + 99_000, ms + 99_000, 10)
                .await
                .unwrap()
                .is_empty()
        );
        records.sweep(now).unwrap();
        let c = Connection::open(dir.path().join("files.sqlite3")).unwrap();
        let count = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(
            count("SELECT COUNT(*) FROM outbox"),
            0,
            "a delivered event stays in the outbox"
        );
        // An endpoint no longer configured is forgotten: it holds nothing back.
        records.retain(&["all".to_owned()]).await.unwrap();
        assert_eq!(
            count("SELECT COUNT(*) FROM fanned_out WHERE endpoint <> 'all'"),
            0
        );
        assert_eq!(
            count("SELECT COUNT(*) FROM fanned_out WHERE endpoint = 'all'"),
            1
        );
    }

    /// Forty issues at once against a cap of five files: five recorded,
    /// and the others told the totals that refused them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_issues_cannot_pass_a_cap_together() {
        let dir = tempfile::tempdir().unwrap();
        let records = SqliteRecords::open(&dir.path().join("files.sqlite3")).unwrap();
        let now = crate::time::now_unix();
        let caps = PendingCaps {
            files: 5,
            bytes: 1 << 30,
            stored: None,
        };
        let mut issues = Vec::new();
        for _ in 0..40 {
            let records = records.clone();
            issues.push(tokio::spawn(async move {
                records
                    .put_within(&record("alice", 10, now), caps, now)
                    .await
            }));
        }
        let mut admitted = 0;
        for issue in issues {
            match issue.await.unwrap().unwrap() {
                None => admitted += 1,
                Some(refused) => assert_eq!(
                    refused,
                    Pending {
                        files: 5,
                        bytes: 50,
                        stored: 0,
                    }
                ),
            }
        }
        assert_eq!(admitted, 5);
        let totals = records.pending_totals("alice", now, 100).await.unwrap();
        assert_eq!(
            totals,
            Pending {
                files: 5,
                bytes: 50,
                stored: 0,
            }
        );
        // The bytes cap too, and another owner is counted apart.
        let big = record("bob", 600, now);
        let caps = PendingCaps {
            files: 5,
            bytes: 1000,
            stored: None,
        };
        assert_eq!(records.put_within(&big, caps, now).await.unwrap(), None);
        let refused = records
            .put_within(&record("bob", 401, now), caps, now)
            .await;
        assert_eq!(
            refused.unwrap(),
            Some(Pending {
                files: 1,
                bytes: 600,
                stored: 0,
            })
        );
    }

    /// The cap on all of a user's bytes counts ready files too, holds under
    /// concurrent issues, and frees what the sweep deletes; the running
    /// figure is rebuilt from the records when the file is opened again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn all_of_a_users_bytes_are_capped_and_freed_as_they_expire() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("files.sqlite3");
        let records = SqliteRecords::open(&path).unwrap();
        let now = crate::time::now_unix();
        let caps = PendingCaps {
            files: 1000,
            bytes: 1 << 40,
            stored: Some(1000),
        };
        // An old file, uploaded, soon swept.
        let mut old = record("alice", 400, now);
        old.expires_at = now - 10;
        old.ready = true;
        records.put(&old).await.unwrap();
        let mut issues = Vec::new();
        for _ in 0..20 {
            let records = records.clone();
            issues.push(tokio::spawn(async move {
                let mut r = record("alice", 100, now);
                r.ready = true;
                records.put_within(&r, caps, now).await
            }));
        }
        let mut admitted = 0;
        for issue in issues {
            if issue.await.unwrap().unwrap().is_none() {
                admitted += 1;
            }
        }
        assert_eq!(admitted, 6, "400 + 6 x 100 fill 1000");
        assert_eq!(records.stored_bytes("alice", now).await.unwrap(), 1000);
        assert_eq!(records.stored_bytes("bob", now).await.unwrap(), 0);
        let refused = records
            .put_within(&record("alice", 1, now), caps, now)
            .await
            .unwrap();
        assert_eq!(refused.map(|p| p.stored), Some(1000));
        assert_eq!(records.sweep(now).unwrap(), 1);
        assert_eq!(records.stored_bytes("alice", now).await.unwrap(), 600);
        assert_eq!(
            records
                .put_within(&record("alice", 400, now), caps, now)
                .await
                .unwrap(),
            None
        );
        drop(records);
        // Skewed on purpose: the next open counts again from the records.
        let c = Connection::open(&path).unwrap();
        c.execute("UPDATE usage SET bytes = 5", []).unwrap();
        drop(c);
        let records = SqliteRecords::open(&path).unwrap();
        assert_eq!(records.stored_bytes("alice", now).await.unwrap(), 1000);
    }

    /// Batches admitted at the same moment never pass a cap together: the
    /// count and the writes are one step of the single writer. (Before,
    /// the service counted and then wrote, and two batches of 60 both
    /// passed a cap of 100.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_batches_never_pass_a_cap() {
        let dir = tempfile::tempdir().unwrap();
        let records = SqliteRecords::open(&dir.path().join("files.sqlite3")).unwrap();
        let now = crate::time::now_unix();
        let caps = PendingCaps {
            files: 100,
            bytes: 1 << 40,
            stored: Some(10_000),
        };
        let mut batches = Vec::new();
        for _ in 0..8 {
            let records = records.clone();
            batches.push(tokio::spawn(async move {
                let batch: Vec<FileRecord> = (0..30).map(|_| record("alice", 10, now)).collect();
                let admission = Admission {
                    records: &batch,
                    sent: (30, 300),
                };
                records.put_all_within(&admission, caps, now).await
            }));
        }
        let mut admitted = 0;
        for batch in batches {
            if batch.await.unwrap().unwrap().is_none() {
                admitted += 1;
            }
        }
        assert_eq!(
            admitted, 3,
            "three batches of 30 fit under 100 pending files"
        );
        let pending = records.pending_totals("alice", now, 1000).await.unwrap();
        assert_eq!(pending.files, 90, "nothing of a refused batch was written");
        // The cap on all of a user's bytes counts copies too.
        let copies: Vec<FileRecord> = (0..2).map(|_| record("alice", 5_000, now)).collect();
        let refused = records
            .put_all_within(
                &Admission {
                    records: &copies,
                    sent: (0, 10_000),
                },
                caps,
                now,
            )
            .await
            .unwrap();
        assert_eq!(refused.map(|p| p.stored), Some(900));
    }

    #[tokio::test]
    async fn live_names_the_ids_that_have_a_record() {
        let dir = tempfile::tempdir().unwrap();
        let records = SqliteRecords::open(&dir.path().join("files.sqlite3")).unwrap();
        let now = crate::time::now_unix();
        let kept = record("alice", 1, now);
        records.put(&kept).await.unwrap();
        let gone = FileId::random().to_string();
        let ids = [kept.file.id.to_string(), gone, "not an id".to_owned()];
        let live = records.live(&ids).unwrap();
        assert_eq!(
            live.into_iter().collect::<Vec<_>>(),
            [kept.file.id.to_string()]
        );
    }
}
