//! Opening the local SQLite files (ledger, file records) the same way:
//! WAL, so readers and a writer share a file across processes, and a busy
//! timeout, so a writer waits for another process's lock instead of failing.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

/// How long a writer waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (creating if needed) the database at `path` in WAL mode.
pub(crate) fn open_wal(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    Ok(conn)
}
