//! The outbox: where events wait for their deliveries, beside the records
//! whose changes they report (one transaction writes both where the store
//! has transactions). What an event says is [`crate::events`]; who delivers
//! it, [`crate::webhooks`].

use super::error::RecordError;
use crate::events::{Delivery, Event, Subscriber};

/// Where events wait for their deliveries. A record store that keeps one
/// writes each event of a change in the change's own transaction.
#[async_trait::async_trait]
pub trait Outbox: Send + Sync + std::fmt::Debug {
    /// Appends `event` on its own (a change the store does not make: a
    /// link redeemed, bytes refused).
    async fn append(&self, event: &Event) -> Result<(), RecordError>;

    /// Gives `subscriber` a delivery of each event appended since its last
    /// call that it takes, then leases up to `limit` of its deliveries due
    /// at `now_ms` until `lease_until_ms` (a worker that dies holding one
    /// leaves it to be tried again then), and answers them, oldest first.
    async fn due(
        &self,
        subscriber: &Subscriber,
        now_ms: i64,
        lease_until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Delivery>, RecordError>;

    /// Forgets every endpoint but `endpoints` (one removed from the
    /// configuration): its deliveries still due, and where it had got to,
    /// so that the events it held back can leave the outbox.
    async fn retain(&self, endpoints: &[String]) -> Result<(), RecordError>;

    /// Ends a delivery: sent, or given up.
    async fn finish(&self, seq: i64, endpoint: &str) -> Result<(), RecordError>;

    /// Counts one more failed attempt of a delivery and sets when it is
    /// tried again.
    async fn retry(
        &self,
        seq: i64,
        endpoint: &str,
        attempts: u32,
        next_ms: i64,
    ) -> Result<(), RecordError>;
}
