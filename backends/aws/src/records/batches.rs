//! Batches' items.

use super::*;
use sluice::records::KeptAsJson as _;
use sluice::records::{Batch, BatchRecords};

#[async_trait::async_trait]
impl BatchRecords for DynamoRecords {
    async fn put_batch(&self, batch: &Batch) -> Result<(), RecordError> {
        let id = batch.key();
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(KEY, s(&batch_key(&id)))
            .item(TTL, n(batch.expires_at))
            .item(RECORD, s(&batch.to_json()))
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", KEY);
        match condition_held(put.send().await).map_err(store_error)? {
            true => Ok(()),
            false => Err(RecordError::AlreadyExists),
        }
    }

    async fn get_batch(&self, id: &FileId) -> Result<Option<Batch>, RecordError> {
        Ok(self
            .item(batch_key(id.as_str()))
            .await?
            .and_then(|item| item.get(RECORD)?.as_s().ok().cloned())
            .and_then(|json| Batch::from_json(id, &json)))
    }
}
