//! Opening the local SQLite files (ledger, file records) the same way:
//! WAL, so readers and a writer share a file across processes, and a busy
//! timeout, so a writer waits for another process's lock instead of failing.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

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
