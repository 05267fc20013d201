//! Small objects (file records) of the local store, kept in an SQLite table
//! rather than as files: an insert costs far less than creating a file, and
//! one is written on every `request_upload`.

use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension as _, params};

use super::StoreError;
use crate::file::ObjectKey;
use crate::sqlite::is_full;
use crate::sqlite::store_error as db;

/// A write for the writer thread: key, bytes, time, and where to answer.
type Write = (
    String,
    Bytes,
    i64,
    tokio::sync::oneshot::Sender<Result<(), Failed>>,
);

/// Why a batch failed, cloneable for every writer waiting on it.
#[derive(Debug, Clone)]
struct Failed {
    full: bool,
    text: String,
}

impl From<Failed> for StoreError {
    fn from(f: Failed) -> Self {
        let kind = if f.full {
            std::io::ErrorKind::StorageFull
        } else {
            std::io::ErrorKind::Other
        };
        StoreError::Io(std::io::Error::new(kind, f.text))
    }
}

/// The most writes committed in one transaction.
const MAX_BATCH: usize = 256;

#[derive(Debug, Clone)]
pub(super) struct SmallObjects {
    /// Reads and sweeps.
    conn: Arc<Mutex<Connection>>,
    /// Writes go to one thread that commits whatever has queued up in one
    /// transaction (group commit): under concurrent writes, one commit
    /// serves many.
    writes: std::sync::mpsc::Sender<Write>,
}

/// Commits queued writes in batches until every sender is gone.
fn writer(mut conn: Connection, queue: std::sync::mpsc::Receiver<Write>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(w) => batch.push(w),
                Err(_) => break,
            }
        }
        let result = (|| {
            let tx = conn.transaction()?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT OR REPLACE INTO small (key, bytes, created_at) VALUES (?1, ?2, ?3)",
                )?;
                for (key, bytes, at, _) in &batch {
                    insert.execute(params![key, bytes.as_ref(), at])?;
                }
            }
            tx.commit()
        })()
        .map_err(|e| Failed {
            full: is_full(&e),
            text: e.to_string(),
        });
        for (_, _, _, reply) in batch {
            let _ = reply.send(result.clone());
        }
    }
}

impl SmallObjects {
    pub(super) fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = crate::sqlite::open_wal(path).map_err(db)?;
        // NORMAL: a commit survives a process crash, and may be lost only to
        // a power cut, which costs a list entry, never bytes.
        conn.execute_batch(
            "PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS small (
                 key TEXT PRIMARY KEY NOT NULL,
                 bytes BLOB NOT NULL,
                 created_at INTEGER NOT NULL
             ) WITHOUT ROWID;",
        )
        .map_err(db)?;
        let write_conn = crate::sqlite::open_wal(path).map_err(db)?;
        // No automatic checkpoints on the write path: one runs inside some
        // unlucky commit and stalls every request queued behind it. The
        // sweep checkpoints instead, off the request path.
        write_conn
            .execute_batch("PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0;")
            .map_err(db)?;
        let (writes, queue) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("sluice-records".into())
            .spawn(move || writer(write_conn, queue))
            .map_err(StoreError::Io)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            writes,
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        crate::sqlite::with(&self.conn, f).await
    }

    pub(super) async fn put(&self, key: &ObjectKey, bytes: Bytes) -> Result<(), StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let write = (
            key.as_str().to_owned(),
            bytes,
            crate::time::now_unix(),
            reply,
        );
        let gone = || StoreError::Io(std::io::Error::other("the record writer has stopped"));
        self.writes.send(write).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?.map_err(StoreError::from)
    }

    pub(super) async fn get(&self, key: &ObjectKey) -> Result<Option<Bytes>, StoreError> {
        let key = key.as_str().to_owned();
        self.with(move |c| {
            c.query_row("SELECT bytes FROM small WHERE key = ?1", [key], |r| {
                r.get::<_, Vec<u8>>(0)
            })
            .optional()
            .map(|b| b.map(Bytes::from))
        })
        .await
    }

    /// Deletes small objects written more than `max_age_secs` ago, then
    /// folds the write-ahead log back into the database and truncates it
    /// (see `open`: no checkpoint runs on the write path), so the log does
    /// not keep the size of the busiest minute for ever.
    pub(super) fn sweep(&self, max_age_secs: i64) -> Result<usize, StoreError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let removed = conn
            .execute(
                "DELETE FROM small WHERE created_at < ?1",
                [crate::time::now_unix() - max_age_secs],
            )
            .map_err(db)?;
        // TRUNCATE waits (the busy timeout) for readers and the writer
        // thread; this runs off the request path, once a minute.
        let _: (i64, i64, i64) = conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(db)?;
        Ok(removed)
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
}
