//! Opening the local SQLite files (ledger, file records) the same way:
//! WAL, so readers and a writer share a file across processes, and a busy
//! timeout, so a writer waits for another process's lock instead of failing.

use std::path::Path;
use std::time::Duration;

use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use crate::store::StoreError;

/// How long a writer waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (creating if needed) the database at `path` in WAL mode. A new
/// file is created readable by its owner only (0600); SQLite gives its WAL
/// and shared-memory files the database file's mode.
pub(crate) fn open_wal(path: &Path) -> rusqlite::Result<Connection> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
        if let Err(e) = created
            && e.kind() != std::io::ErrorKind::AlreadyExists
        {
            return Err(rusqlite::Error::InvalidPath(path.to_path_buf()));
        }
    }
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    Ok(conn)
}

/// Whether SQLite failed for want of disk space.
pub(crate) fn is_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

/// A store error from an SQLite one; a full disk keeps its kind (507).
pub(crate) fn store_error(e: rusqlite::Error) -> StoreError {
    let kind = if is_full(&e) {
        std::io::ErrorKind::StorageFull
    } else {
        std::io::ErrorKind::Other
    };
    StoreError::Io(std::io::Error::new(kind, e))
}

/// Runs `f` on `conn` off the runtime's threads.
pub(crate) async fn with<T: Send + 'static>(
    conn: &Arc<Mutex<Connection>>,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
) -> Result<T, StoreError> {
    let conn = conn.clone();
    tokio::task::spawn_blocking(move || f(&conn.lock().unwrap_or_else(|p| p.into_inner())))
        .await
        .map_err(|e| StoreError::Io(std::io::Error::other(e)))?
        .map_err(store_error)
}
