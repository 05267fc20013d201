//! The ledger of spent single-use tokens.
//!
//! A link token is spent by recording its `jti`; recording is atomic, so of
//! any number of concurrent redemptions, on any replica, exactly one wins.
//! Records are durable and kept until the token's own expiry, after which the
//! token is refused anyway.
//!
//! Beside spent tokens it keeps allowances shared by every replica
//! ([`Ledger::charge`]): counters that only grow, up to a limit, until they
//! expire (a user's download bytes in one hour).

#[cfg(feature = "local")]
mod sqlite;

#[cfg(feature = "local")]
pub use sqlite::SqliteLedger;

use std::fmt;

/// The outcome of spending a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spend {
    /// This call spent it: go ahead.
    Fresh,
    /// It was spent before: refuse.
    AlreadySpent,
}

/// Why the ledger could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The backing database failed.
    #[error("ledger backend failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The backing database cannot answer now (locked, throttled, out of
    /// reach); the same request may succeed later. Nothing was spent.
    #[error("ledger unavailable: {0}")]
    Unavailable(String),
}

/// Records spent token ids.
#[async_trait::async_trait]
pub trait Ledger: Send + Sync + fmt::Debug {
    /// Spends `jti`, keeping the record at least until `expires_at` (epoch
    /// seconds). Atomic: exactly one caller ever gets [`Spend::Fresh`].
    async fn spend(&self, jti: &str, expires_at: i64) -> Result<Spend, LedgerError>;

    /// [`Ledger::spend`], the spent record carrying `event` (the body of
    /// the event the spend reports, `file.downloaded`): a ledger whose
    /// records are an outbox (DynamoDB's, through the table's stream)
    /// keeps it in the same write; the others ignore it.
    async fn spend_reporting(
        &self,
        jti: &str,
        expires_at: i64,
        event: &str,
    ) -> Result<Spend, LedgerError> {
        let _ = event;
        self.spend(jti, expires_at).await
    }

    /// Keeps `event` (its id and body), which no change of a record
    /// carries (`file.rejected`: bytes refused, nothing stored), until
    /// `expires_at`: a ledger whose records are an outbox (DynamoDB's,
    /// through the table's stream) writes it as an item of its own, once
    /// per id; the others ignore it (locally the outbox has it).
    async fn keep_event(&self, id: &str, body: &str, expires_at: i64) -> Result<(), LedgerError> {
        let _ = (id, body, expires_at);
        Ok(())
    }

    /// Whether `jti` is already spent: a read, to refuse a replayed link
    /// before anything is read for it. Only [`Ledger::spend`] decides.
    async fn is_spent(&self, jti: &str) -> Result<bool, LedgerError>;

    /// Adds `amount` to the counter `key` if it then holds at most `limit`,
    /// keeping it at least until `expires_at`: `true` if it was added.
    /// Atomic across replicas: concurrent charges never pass `limit`.
    async fn charge(
        &self,
        key: &str,
        amount: u64,
        limit: u64,
        expires_at: i64,
    ) -> Result<bool, LedgerError>;
}
