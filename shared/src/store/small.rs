//! Small objects of the local store (an actions catalog kept beside the
//! files), in an SQLite table rather than as files: an insert costs far less
//! than creating a file.

use std::path::Path;

use bytes::Bytes;
use rusqlite::{OptionalExtension as _, params};

use super::StoreError;
use crate::file::ObjectKey;
use crate::sqlite::Db;

/// NORMAL: a commit survives a process crash, and may be lost only to a
/// power cut, which costs a small object, never a file's bytes.
const SCHEMA: &str = "PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS small (
                 key TEXT PRIMARY KEY NOT NULL,
                 bytes BLOB NOT NULL,
                 created_at INTEGER NOT NULL
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS small_by_age ON small (created_at);";

/// Small objects written before `?1`, found by their age's index (a scan
/// would read every object's bytes, holding the write lock).
const SWEEP: &str = "DELETE FROM small WHERE created_at < ?1";

#[derive(Debug, Clone)]
pub(super) struct SmallObjects {
    db: Db,
}

impl SmallObjects {
    pub(super) fn open(path: &Path) -> Result<Self, StoreError> {
        Ok(Self {
            db: Db::open(path, SCHEMA, "sluice-small")?,
        })
    }

    pub(super) async fn put(&self, key: &ObjectKey, bytes: Bytes) -> Result<(), StoreError> {
        let (key, at) = (key.as_str().to_owned(), crate::time::now_unix());
        self.db
            .write(move |c| {
                c.prepare_cached(
                    "INSERT OR REPLACE INTO small (key, bytes, created_at) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![key, bytes.as_ref(), at])
                .map(|_| ())
            })
            .await
    }

    pub(super) async fn get(&self, key: &ObjectKey) -> Result<Option<Bytes>, StoreError> {
        let key = key.as_str().to_owned();
        self.db
            .read(move |c| {
                c.query_row("SELECT bytes FROM small WHERE key = ?1", [key], |r| {
                    r.get::<_, Vec<u8>>(0)
                })
                .optional()
                .map(|b| b.map(Bytes::from))
            })
            .await
    }

    /// Deletes small objects written more than `max_age_secs` ago, then
    /// truncates the write-ahead log (see [`Db::sweep`]).
    pub(super) fn sweep(&self, max_age_secs: i64) -> Result<usize, StoreError> {
        self.db
            .sweep(|c| c.execute(SWEEP, [crate::time::now_unix() - max_age_secs]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records written between two sweeps grow the write-ahead log; the
    /// sweep folds it back and truncates it to nothing.
    #[tokio::test]
    async fn the_sweep_truncates_the_write_ahead_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.sqlite3");
        let small = SmallObjects::open(&path).unwrap();
        for i in 0..200 {
            let key = ObjectKey::from_stored(format!("records/ab/{i}.json"));
            small
                .put(&key, Bytes::from(vec![b'x'; 2000]))
                .await
                .unwrap();
        }
        let wal = dir.path().join("records.sqlite3-wal");
        assert!(std::fs::metadata(&wal).unwrap().len() > 100_000);
        small.sweep(3600).unwrap();
        assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0);
        let key = ObjectKey::from_stored("records/ab/7.json".into());
        assert!(
            small.get(&key).await.unwrap().is_some(),
            "young records stay"
        );
    }

    /// The sweep reads only old objects, not every object's bytes.
    #[test]
    fn the_sweep_finds_old_objects_by_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small.sqlite3");
        SmallObjects::open(&path).unwrap();
        let c = rusqlite::Connection::open(&path).unwrap();
        let plan = crate::sqlite::plan(&c, SWEEP);
        assert!(plan.contains("INDEX small_by_age"), "{plan}");
    }
}
