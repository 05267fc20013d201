//! Imports' items.

use super::*;
use sluice::records::KeptAsJson as _;
use sluice::records::{ImportRecord, ImportRecords};

#[async_trait::async_trait]
impl ImportRecords for DynamoRecords {
    async fn put_import(&self, record: &ImportRecord) -> Result<(), RecordError> {
        let id = record.key();
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(KEY, s(&import_key(&id)))
            .item(TTL, n(record.expires_at))
            .item(RECORD, s(&record.to_json()))
            .send()
            .await;
        put.map(drop).map_err(|e| store_error(ledger_error(e)))
    }

    async fn get_import(&self, id: &FileId) -> Result<Option<ImportRecord>, RecordError> {
        Ok(self
            .item(import_key(id.as_str()))
            .await?
            .and_then(|item| item.get(RECORD)?.as_s().ok().cloned())
            .and_then(|json| ImportRecord::from_json(id, &json)))
    }

    /// Each turn an item of its own (`import#turn#<owner hash>#<n>`, under
    /// the prefix the functions that start and run imports are granted),
    /// taken by a conditional put that succeeds where none is held or the
    /// one held has lapsed.
    async fn take_import_turn(
        &self,
        owner: &str,
        holder: &str,
        limit: u32,
        until: i64,
    ) -> Result<Option<u32>, RecordError> {
        let now = sluice::time::now_unix();
        for turn in 0..limit {
            let put = self
                .client
                .put_item()
                .table_name(&self.table)
                .item(KEY, s(&turn_key(owner, turn)))
                .item(HOLDER, s(holder))
                .item(UNTIL, n(until))
                .item(TTL, n(until + 3600))
                .condition_expression("attribute_not_exists(#k) OR #u < :now")
                .expression_attribute_names("#k", KEY)
                .expression_attribute_names("#u", UNTIL)
                .expression_attribute_values(":now", n(now));
            if condition_held(put.send().await).map_err(store_error)? {
                return Ok(Some(turn));
            }
        }
        Ok(None)
    }

    async fn give_import_turn(&self, owner: &str, n: u32, holder: &str) -> Result<(), RecordError> {
        let delete = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(KEY, s(&turn_key(owner, n)))
            .condition_expression("#h = :me")
            .expression_attribute_names("#h", HOLDER)
            .expression_attribute_values(":me", s(holder));
        condition_held(delete.send().await)
            .map(drop)
            .map_err(store_error)
    }
}

/// The item of `owner`'s import turn `n`.
fn turn_key(owner: &str, n: u32) -> String {
    import_key(&format!("turn#{}#{n}", owner_hash(owner)))
}
