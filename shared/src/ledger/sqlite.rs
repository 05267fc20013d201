//! The local ledger: one SQLite file in WAL mode, safe to share between
//! processes on the same data directory.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension as _, params};

use super::{Ledger, LedgerError, Spend};

/// Spends between two sweeps of expired records.
const SWEEP_EVERY: u64 = 1024;

/// A spent-token ledger in an SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteLedger {
    conn: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    conn: Connection,
    spends: u64,
}

fn backend(e: impl std::error::Error + Send + Sync + 'static) -> LedgerError {
    LedgerError::Backend(Box::new(e))
}

/// Another process holding the database past the busy timeout is "not
/// now", not a failure.
fn write_error(e: rusqlite::Error) -> LedgerError {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    match e.sqlite_error_code() {
        Some(DatabaseBusy | DatabaseLocked) => {
            LedgerError::Unavailable(format!("the ledger is locked by another process ({e})"))
        }
        _ => backend(e),
    }
}

impl SqliteLedger {
    /// Opens (creating if needed) the ledger at `path`.
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        let conn = crate::sqlite::open_wal(path).map_err(backend)?;
        // FULL sync makes each spend durable before it is acknowledged.
        conn.execute_batch(
            "PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS spent (
                 jti TEXT PRIMARY KEY NOT NULL,
                 expires_at INTEGER NOT NULL
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS spent_expiry ON spent (expires_at);
             CREATE TABLE IF NOT EXISTS allowances (
                 key TEXT PRIMARY KEY NOT NULL,
                 used INTEGER NOT NULL,
                 expires_at INTEGER NOT NULL
             ) WITHOUT ROWID;",
        )
        .map_err(backend)?;
        let ledger = Self {
            conn: Arc::new(Mutex::new(State { conn, spends: 0 })),
        };
        ledger.sweep_now()?;
        Ok(ledger)
    }

    /// Removes records of tokens that expired more than a minute ago.
    fn sweep_now(&self) -> Result<usize, LedgerError> {
        let state = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        sweep(&state.conn)
    }

    /// Whether `jti` is recorded as spent.
    pub fn is_spent_now(&self, jti: &str) -> Result<bool, LedgerError> {
        let state = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        state
            .conn
            .query_row("SELECT 1 FROM spent WHERE jti = ?1", [jti], |_| Ok(()))
            .optional()
            .map(|r| r.is_some())
            .map_err(backend)
    }
}

fn sweep(conn: &Connection) -> Result<usize, LedgerError> {
    let before = crate::time::now_unix() - 60;
    conn.execute("DELETE FROM allowances WHERE expires_at < ?1", [before])
        .map_err(backend)?;
    conn.execute("DELETE FROM spent WHERE expires_at < ?1", [before])
        .map_err(backend)
}

#[async_trait::async_trait]
impl Ledger for SqliteLedger {
    async fn spend(&self, jti: &str, expires_at: i64) -> Result<Spend, LedgerError> {
        let conn = self.conn.clone();
        let jti = jti.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut state = conn.lock().unwrap_or_else(|p| p.into_inner());
            let inserted = state
                .conn
                .execute(
                    "INSERT INTO spent (jti, expires_at) VALUES (?1, ?2) ON CONFLICT (jti) DO NOTHING",
                    params![jti, expires_at],
                )
                .map_err(write_error)?;
            state.spends += 1;
            if state.spends.is_multiple_of(SWEEP_EVERY) {
                sweep(&state.conn)?;
            }
            Ok(if inserted == 1 {
                Spend::Fresh
            } else {
                Spend::AlreadySpent
            })
        })
        .await
        .map_err(backend)?
    }

    async fn is_spent(&self, jti: &str) -> Result<bool, LedgerError> {
        let (ledger, jti) = (self.clone(), jti.to_owned());
        tokio::task::spawn_blocking(move || ledger.is_spent_now(&jti))
            .await
            .map_err(backend)?
    }

    async fn charge(
        &self,
        key: &str,
        amount: u64,
        limit: u64,
        expires_at: i64,
    ) -> Result<bool, LedgerError> {
        if amount > limit {
            return Ok(false);
        }
        let conn = self.conn.clone();
        let key = key.to_owned();
        let (amount, limit) = (
            i64::try_from(amount).unwrap_or(i64::MAX),
            i64::try_from(limit).unwrap_or(i64::MAX),
        );
        tokio::task::spawn_blocking(move || {
            let state = conn.lock().unwrap_or_else(|p| p.into_inner());
            // One statement: another process sharing the file sees the
            // counter before or after, never between.
            let changed = state
                .conn
                .execute(
                    "INSERT INTO allowances (key, used, expires_at) VALUES (?1, ?2, ?4)
                     ON CONFLICT (key) DO UPDATE SET used = used + ?2
                     WHERE used + ?2 <= ?3",
                    params![key, amount, limit, expires_at],
                )
                .map_err(write_error)?;
            Ok(changed == 1)
        })
        .await
        .map_err(backend)?
    }
}
