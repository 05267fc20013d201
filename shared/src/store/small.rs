//! Small objects (file records) of the local store, kept in an SQLite table
//! rather than as files: an insert costs far less than creating a file, and
//! one is written on every `request_upload`.

use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension as _, params};

use super::StoreError;
use crate::file::ObjectKey;

#[derive(Debug, Clone)]
pub(super) struct SmallObjects {
    conn: Arc<Mutex<Connection>>,
}

fn db(e: rusqlite::Error) -> StoreError {
    StoreError::Io(std::io::Error::other(e))
}

/// The smallest string greater than every key that starts with `prefix`,
/// for a range scan. Prefixes end in `/`, whose successor is `0`.
fn prefix_end(prefix: &str) -> String {
    match prefix.strip_suffix('/') {
        Some(stem) => format!("{stem}0"),
        None => format!("{prefix}\u{10FFFF}"),
    }
}

impl SmallObjects {
    pub(super) fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(db)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(db)?;
        let _: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(db)?;
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
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || f(&conn.lock().unwrap_or_else(|p| p.into_inner())))
            .await
            .map_err(|e| StoreError::Io(std::io::Error::other(e)))?
            .map_err(db)
    }

    pub(super) async fn put(&self, key: &ObjectKey, bytes: Bytes) -> Result<(), StoreError> {
        let key = key.as_str().to_owned();
        self.with(move |c| {
            c.execute(
                "INSERT OR REPLACE INTO small (key, bytes, created_at) VALUES (?1, ?2, ?3)",
                params![key, bytes.as_ref(), crate::time::now_unix()],
            )
            .map(drop)
        })
        .await
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

    pub(super) async fn list(&self, prefix: &str) -> Result<Vec<ObjectKey>, StoreError> {
        let (start, end) = (prefix.to_owned(), prefix_end(prefix));
        self.with(move |c| {
            let mut stmt = c.prepare("SELECT key FROM small WHERE key >= ?1 AND key < ?2")?;
            let keys = stmt
                .query_map([start, end], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(keys.into_iter().map(ObjectKey::from_stored).collect())
        })
        .await
    }

    /// Deletes small objects written more than `max_age_secs` ago.
    pub(super) fn sweep(&self, max_age_secs: i64) -> Result<usize, StoreError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.execute(
            "DELETE FROM small WHERE created_at < ?1",
            [crate::time::now_unix() - max_age_secs],
        )
        .map_err(db)
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn a_prefix_range_ends_just_past_its_keys() {
        let end = prefix_end("records/ab/");
        assert!(*"records/ab/zzzz" < *end);
        assert!(*"records/ab0" >= *end);
        assert!(*"records/ab/" < *end);
    }
}
