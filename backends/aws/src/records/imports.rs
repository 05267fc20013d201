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
}
