//! What a user's files take, and admission under the caps inside the
//! owner's admission lease.

use super::*;
use sluice::records::{Admission, Pending, PendingCaps, Usage};

#[async_trait::async_trait]
impl Usage for DynamoRecords {
    /// The count and the writes under the owner's admission lease: batches
    /// of one user are admitted one at a time on every replica, so
    /// concurrent batches never pass a cap together.
    async fn put_all_within(
        &self,
        batch: &Admission<'_>,
        caps: PendingCaps,
        now: i64,
    ) -> Result<Option<Pending>, RecordError> {
        let Some(owner) = batch.owner() else {
            return Ok(None);
        };
        let holder = self.admission(owner).await?;
        let admitted = sluice::records::count_then_put(self, batch, caps, now).await;
        self.release_admission(owner, &holder).await;
        admitted
    }

    async fn pending(
        &self,
        owner: &str,
        now: i64,
        at_most: u64,
    ) -> Result<Vec<FileRecord>, RecordError> {
        let hash = owner_hash(owner);
        let mut found = Vec::new();
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(PENDING)
                .key_condition_expression("#p = :o AND #c > :since")
                .filter_expression("#t > :now")
                .expression_attribute_names("#p", PENDING_OWNER)
                .expression_attribute_names("#c", CREATED)
                .expression_attribute_names("#t", TTL)
                .expression_attribute_values(":o", s(&hash))
                .expression_attribute_values(":since", n(self.issued_since(now)))
                .expression_attribute_values(":now", n(now))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| store_error(ledger_error(e)))?;
            found.extend(out.items().iter().filter_map(record_of));
            if found.len() as u64 >= at_most {
                found.truncate(usize::try_from(at_most).unwrap_or(usize::MAX));
                return Ok(found);
            }
            match out.last_evaluated_key() {
                Some(k) => start = Some(k.clone()),
                None => return Ok(found),
            }
        }
    }
}
