//! The outbox: each event in the transaction of its change, one delivery
//! row per event and endpoint still to send.

use rusqlite::params;

use super::*;

/// An endpoint's deliveries due, oldest first: read in the index's order
/// and stopped at the limit, however long the backlog.
pub(super) const DUE: &str = "SELECT d.seq, d.endpoint, d.attempts, o.event_id, o.body
     FROM deliveries d JOIN outbox o ON o.seq = d.seq
     WHERE d.endpoint = ?3 AND d.next_ms <= ?1
     ORDER BY d.next_ms, d.seq LIMIT ?2";

#[async_trait::async_trait]
impl Outbox for SqliteRecords {
    async fn append(&self, event: &Event) -> Result<(), RecordError> {
        let event = event.clone();
        self.db.write(move |c| append(c, &event)).await
    }

    async fn due(
        &self,
        subscriber: &Subscriber,
        now_ms: i64,
        lease_until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Delivery>, RecordError> {
        let sub = subscriber.clone();
        self.db
            .write(move |c| {
                let from: i64 = c
                    .prepare_cached("SELECT COALESCE((SELECT seq FROM fanned_out WHERE endpoint = ?1), 0)")?
                    .query_row([&sub.name], |r| r.get(0))?;
                let new: Vec<(i64, String)> = c
                    .prepare_cached("SELECT seq, type FROM outbox WHERE seq > ?1 ORDER BY seq")?
                    .query_map([from], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                if let Some(last) = new.last().map(|(seq, _)| *seq) {
                    for (seq, kind) in new {
                        if EventType::parse(&kind).is_some_and(|k| sub.takes(k)) {
                            c.prepare_cached(
                                "INSERT OR IGNORE INTO deliveries (seq, endpoint, next_ms) VALUES (?1, ?2, ?3)",
                            )?
                            .execute(params![seq, sub.name, now_ms])?;
                        }
                    }
                    c.prepare_cached(
                        "INSERT INTO fanned_out (endpoint, seq) VALUES (?1, ?2)
                         ON CONFLICT (endpoint) DO UPDATE SET seq = excluded.seq",
                    )?
                    .execute(params![sub.name, last])?;
                }
                let due: Vec<Delivery> = c
                    .prepare_cached(DUE)?
                    .query_map(params![now_ms, limit as i64, sub.name], |r| {
                        Ok(Delivery {
                            seq: r.get(0)?,
                            endpoint: r.get(1)?,
                            attempts: r.get(2)?,
                            event_id: r.get(3)?,
                            body: r.get(4)?,
                        })
                    })?
                    .collect::<rusqlite::Result<_>>()?;
                for d in &due {
                    c.prepare_cached("UPDATE deliveries SET next_ms = ?3 WHERE seq = ?1 AND endpoint = ?2")?
                        .execute(params![d.seq, d.endpoint, lease_until_ms])?;
                }
                Ok(due)
            })
            .await
    }

    async fn retain(&self, endpoints: &[String]) -> Result<(), RecordError> {
        let keep = serde_json::to_string(endpoints).expect("names serialize");
        self.db
            .write(move |c| {
                for table in ["deliveries", "fanned_out"] {
                    c.execute(
                        &format!(
                            "DELETE FROM {table} WHERE endpoint NOT IN (SELECT value FROM json_each(?1))"
                        ),
                        [&keep],
                    )?;
                }
                Ok(())
            })
            .await
    }

    async fn finish(&self, seq: i64, endpoint: &str) -> Result<(), RecordError> {
        let endpoint = endpoint.to_owned();
        self.db
            .write(move |c| {
                c.prepare_cached("DELETE FROM deliveries WHERE seq = ?1 AND endpoint = ?2")?
                    .execute(params![seq, endpoint])
                    .map(|_| ())
            })
            .await
    }

    async fn retry(
        &self,
        seq: i64,
        endpoint: &str,
        attempts: u32,
        next_ms: i64,
    ) -> Result<(), RecordError> {
        let endpoint = endpoint.to_owned();
        self.db
            .write(move |c| {
                c.prepare_cached(
                    "UPDATE deliveries SET attempts = ?3, next_ms = ?4 WHERE seq = ?1 AND endpoint = ?2",
                )?
                .execute(params![seq, endpoint, attempts, next_ms])
                .map(|_| ())
            })
            .await
    }
}
