//! Files' records in the table: put once, found, paged through the owner
//! index, deleted to a tombstone, marked ready.

use super::*;
use sluice::records::{Cursor, FileRecords, Page};

#[async_trait::async_trait]
impl FileRecords for DynamoRecords {
    async fn put(&self, record: &FileRecord) -> Result<(), RecordError> {
        let owner = owner_hash(&record.file.owner);
        let id = record.file.id.to_string();
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(KEY, s(&key(&id)))
            .item(OWNER, s(&owner))
            .item(CREATED, n(record.created_ms))
            .item(TTL, n(record.expires_at))
            .item(RECORD, s(&record.to_json()))
            .item(
                DIGEST,
                s(&digest(&owner, &record.file.sha256, record.file.size)),
            )
            .item(READY, AttributeValue::Bool(record.ready));
        if let Some(proof) = &record.proof {
            put = put.item(PROOF, s(proof));
        }
        if !record.ready {
            put = put.item(PENDING_OWNER, s(&owner));
        }
        // Written once: a second file under the same id (two starts of one
        // browser page at once) must not replace the first.
        let put = put
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", KEY);
        match condition_held(put.send().await).map_err(store_error)? {
            true => Ok(()),
            false => Err(RecordError::AlreadyExists),
        }
    }

    async fn get(&self, owner: &str, id: &FileId) -> Result<Option<FileRecord>, RecordError> {
        Ok(self.find(id).await?.filter(|r| r.file.owner == owner))
    }

    async fn find(&self, id: &FileId) -> Result<Option<FileRecord>, RecordError> {
        self.read(key(id.as_str())).await
    }

    async fn page(
        &self,
        owner: &str,
        limit: usize,
        after: Option<&Cursor>,
        now: i64,
    ) -> Result<Page, RecordError> {
        let hash = owner_hash(owner);
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(BY_OWNER)
            .key_condition_expression("#o = :o AND #c > :since")
            .filter_expression("#t > :now")
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_names("#c", CREATED)
            .expression_attribute_names("#t", TTL)
            .expression_attribute_values(":o", s(&hash))
            .expression_attribute_values(":since", n(self.issued_since(now)))
            .expression_attribute_values(":now", n(now))
            .scan_index_forward(false)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX));
        if let Some(c) = after {
            query = query
                .exclusive_start_key(KEY, s(&key(&c.file_id)))
                .exclusive_start_key(OWNER, s(&hash))
                .exclusive_start_key(CREATED, n(c.created_ms));
        }
        let out = query
            .send()
            .await
            .map_err(|e| store_error(ledger_error(e)))?;
        let records = out.items().iter().filter_map(record_of).collect();
        let next = out.last_evaluated_key().and_then(|k| {
            let pk = k.get(KEY)?.as_s().ok()?;
            let created = k.get(CREATED)?.as_n().ok()?.parse().ok()?;
            Some(Cursor {
                created_ms: created,
                file_id: pk.rsplit('#').next()?.to_owned(),
            })
        });
        Ok(Page { records, next })
    }

    async fn find_ready(
        &self,
        owner: &str,
        size: u64,
        sha256: sluice::Sha256,
        now: i64,
    ) -> Result<Option<FileRecord>, RecordError> {
        // One page of at most FIND_READY_ITEMS items, whatever the filter
        // keeps (a Limit counts items read, not items kept): a user with
        // thousands of records of one digest (copies, expired ones) costs
        // each lookup the same. Missing a ready copy past them only means
        // the file is sent again.
        let key = digest(&owner_hash(owner), &sha256, size);
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(BY_DIGEST)
            .key_condition_expression("#d = :d")
            .filter_expression("#t > :now AND #r = :t")
            .expression_attribute_names("#d", DIGEST)
            .expression_attribute_names("#t", TTL)
            .expression_attribute_names("#r", READY)
            .expression_attribute_values(":d", s(&key))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .limit(FIND_READY_ITEMS)
            .send()
            .await
            .map_err(|e| store_error(ledger_error(e)))?;
        Ok(out
            .items()
            .iter()
            .filter_map(record_of)
            .max_by_key(|r| r.expires_at))
    }

    async fn delete(&self, owner: &str, id: &FileId) -> Result<Option<FileRecord>, RecordError> {
        let Some(record) = self.get(owner, id).await? else {
            return Ok(None);
        };
        // One conditional write replaces the record by its tombstone: only
        // if it is still the owner's record (not a tombstone already).
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(KEY, s(&key(id.as_str())))
            .item(GONE, s(&record.to_json()))
            .item(TTL, n(record.expires_at))
            .condition_expression("#o = :o")
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_values(":o", s(&owner_hash(owner)))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await;
        match result {
            // The record as it was when it went (marked ready meanwhile, say).
            Ok(out) => Ok(out.attributes.as_ref().and_then(record_of).or(Some(record))),
            Err(e)
                if e.as_service_error().and_then(|e| e.code())
                    == Some("ConditionalCheckFailedException") =>
            {
                Ok(None)
            }
            Err(e) => Err(store_error(ledger_error(e))),
        }
    }

    async fn deleted(&self, id: &FileId) -> Result<Option<FileRecord>, RecordError> {
        let item = self.item(key(id.as_str())).await?;
        Ok(item
            .as_ref()
            .and_then(|item| item.get(GONE)?.as_s().ok())
            .and_then(|json| FileRecord::from_json(json, false, None)))
    }

    async fn declare(
        &self,
        owner: &str,
        id: &FileId,
        sha256: sluice::Sha256,
    ) -> Result<Option<FileRecord>, RecordError> {
        let Some(mut record) = self.get(owner, id).await? else {
            return Ok(None);
        };
        if !record.file.sha256.is_to_come() {
            return Ok(Some(record));
        }
        let owner_key = owner_hash(owner);
        let was = digest(&owner_key, &record.file.sha256, record.file.size);
        record.file.sha256 = sha256;
        // Only while its digest is still to come (the digest attribute
        // says so): one declared meanwhile stands, and is read again.
        let update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY, s(&key(id.as_str())))
            .update_expression("SET #rec = :rec, #d = :d")
            .condition_expression("#d = :was")
            .expression_attribute_names("#rec", RECORD)
            .expression_attribute_names("#d", DIGEST)
            .expression_attribute_values(":rec", s(&record.to_json()))
            .expression_attribute_values(":d", s(&digest(&owner_key, &sha256, record.file.size)))
            .expression_attribute_values(":was", s(&was));
        if condition_held(update.send().await).map_err(store_error)? {
            return Ok(Some(record));
        }
        self.get(owner, id).await
    }

    async fn mark_ready(&self, owner: &str, id: &FileId) -> Result<(), RecordError> {
        // Not marked: not there (expired), or another owner's.
        self.mark(key(id.as_str()), &owner_hash(owner))
            .await
            .map(drop)
    }

    async fn note_scan(
        &self,
        owner: &str,
        id: &FileId,
        note: &sluice::records::ScanNote,
    ) -> Result<(), RecordError> {
        // Only a record (not a tombstone) of the owner's that is not ready;
        // a first note only where none is kept.
        let mut condition = "attribute_exists(#rec) AND #o = :o AND #r <> :t".to_owned();
        if note.verdict.is_none() {
            condition.push_str(" AND attribute_not_exists(#s)");
        }
        // A refused file holds no place among the owner's pending ones.
        let refused = note.verdict.as_ref().is_some_and(|v| !v.passes());
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY, s(&key(id.as_str())))
            .update_expression(if refused {
                "SET #s = :s, #x = :t REMOVE #p"
            } else {
                "SET #s = :s"
            });
        if refused {
            update = update
                .expression_attribute_names("#p", PENDING_OWNER)
                .expression_attribute_names("#x", REFUSED);
        }
        let result = update
            .condition_expression(condition)
            .expression_attribute_names("#rec", RECORD)
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_names("#r", READY)
            .expression_attribute_names("#s", SCAN)
            .expression_attribute_values(":o", s(&owner_hash(owner)))
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .expression_attribute_values(":s", s(&note.to_json()))
            .send()
            .await;
        condition_held(result).map_err(store_error).map(drop)
    }
}
