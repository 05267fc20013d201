//! File records in an SQLite file of the data directory: one table, keyed by
//! file id (in the order ids are made), indexed by owner and issue time for
//! pages newest first, and a partial index of pending files for the
//! per-user caps.

use std::path::Path;

use rusqlite::{Connection, params};

mod batches;
mod files;
mod imports;
mod lease;
mod outbox;
mod usage;

use super::RecordStore;
use super::error::RecordError;
use super::record::{FileRecord, ScanNote};
use super::usage::Pending;
use crate::events::{Delivery, Event, EventType, Subscriber};
use crate::file::{FileId, owner_hash};
use crate::records::Outbox;
use crate::sha::Sha256;
use crate::sqlite::Db;

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
/// constraint, which the store answers as [`RecordError::AlreadyExists`]).
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
                 scan TEXT,
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
             CREATE TABLE IF NOT EXISTS imports (
                 import_id TEXT PRIMARY KEY,
                 expires_at INTEGER NOT NULL,
                 import TEXT NOT NULL
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS imports_by_expiry ON imports (expires_at);
             CREATE TABLE IF NOT EXISTS import_turns (
                 owner TEXT NOT NULL,
                 n INTEGER NOT NULL,
                 holder TEXT NOT NULL,
                 until INTEGER NOT NULL,
                 PRIMARY KEY (owner, n)
             ) WITHOUT ROWID;
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
const PAGE: &str = "SELECT record, ready, proof, scan FROM files
         WHERE owner = ?1 AND expires_at > ?2 AND (created_ms, file_id) < (?3, ?4)
         ORDER BY created_ms DESC, file_id DESC LIMIT ?5";

/// The caller's ready file of a digest and size that expires last, found
/// by the digest index (an index on the record's own `sha256`, so a data
/// directory made before it needs no new column).
const READY_BY_DIGEST: &str =
    "SELECT record, ready, proof, scan FROM files INDEXED BY files_by_digest
         WHERE owner = ?1 AND json_extract(record, '$.sha256') = ?2 AND size = ?3
           AND ready = 1 AND expires_at > ?4
         ORDER BY expires_at DESC LIMIT 1";

/// The caller's oldest pending files.
const PENDING: &str = "SELECT record, ready, proof, scan FROM files INDEXED BY files_pending_sizes
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
    pub fn open(path: &Path) -> Result<Self, RecordError> {
        let db = Db::open(
            path,
            &format!("PRAGMA synchronous = NORMAL; {TABLES} {REBUILD_USAGE}"),
            "sluice-records",
        )?;
        // A data directory from before malware scanning has no `scan`
        // column: it is added, empty (no file of it was scanned).
        db.read_now(|c| {
            let has: bool = c
                .prepare("SELECT 1 FROM pragma_table_info('files') WHERE name = 'scan'")?
                .exists([])?;
            if !has {
                c.execute_batch("ALTER TABLE files ADD COLUMN scan TEXT")?;
            }
            Ok(())
        })?;
        Ok(Self { db, events: false })
    }

    /// These records writing an event to the outbox with each change it
    /// reports, for the webhooks' worker ([`crate::records::Outbox`]).
    pub fn with_events(mut self) -> Self {
        self.events = true;
        self
    }

    /// Up to `limit` unexpired files whose bytes wait for their malware
    /// scan's verdict (noted, no verdict yet), oldest first: what a server
    /// that starts again scans, the scans it was running having ended
    /// with it.
    pub async fn awaiting_scan(
        &self,
        now: i64,
        limit: usize,
    ) -> Result<Vec<FileRecord>, RecordError> {
        let limit = limit as i64;
        self.db
            .read(move |c| {
                let mut stmt = c.prepare_cached(
                    "SELECT record, ready, proof, scan FROM files
                     WHERE ready = 0 AND scan IS NOT NULL AND expires_at > ?1
                       AND json_extract(scan, '$.verdict') IS NULL
                     ORDER BY created_ms LIMIT ?2",
                )?;
                rows(&mut stmt, params![now, limit])
            })
            .await
    }

    /// Which of `ids` (file ids) have a record, blocking: what the local
    /// sweep keeps, whatever its objects' times say (a deduplicated copy
    /// is a hard link, with its original's time).
    pub fn live(&self, ids: &[String]) -> Result<std::collections::HashSet<String>, RecordError> {
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
    pub fn sweep(&self, before: i64) -> Result<usize, RecordError> {
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
            tx.execute("DELETE FROM imports WHERE expires_at < ?1", [before])?;
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

/// A record's row: its JSON, ready flag, proof and scan note.
type Row = (String, bool, Option<String>, Option<String>);

/// A record's row ([`Row`]).
fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    // `ready` is 0 (pending), 1 (ready) or 2 (refused by its scan).
    Ok((r.get(0)?, r.get::<_, i64>(1)? == 1, r.get(2)?, r.get(3)?))
}

/// The record a [`Row`] holds; `None` if this version cannot read it.
fn record_of((json, ready, proof, scan): Row) -> Option<FileRecord> {
    FileRecord::from_json(&json, ready, proof).map(|r| r.with_scan(scan.as_deref()))
}

fn rows(
    stmt: &mut rusqlite::Statement<'_>,
    args: impl rusqlite::Params,
) -> rusqlite::Result<Vec<FileRecord>> {
    let found = stmt.query_map(args, row)?;
    let mut out = Vec::new();
    for row in found {
        if let Some(record) = record_of(row?) {
            out.push(record);
        }
    }
    Ok(out)
}

impl RecordStore for SqliteRecords {
    fn outbox(&self) -> Option<&dyn Outbox> {
        self.events.then_some(self as &dyn Outbox)
    }
}

#[cfg(test)]
mod tests;
