//! The proof's lease: one conditional update of the record's item.

use super::*;
use sluice::records::ProofLease;

#[async_trait::async_trait]
impl ProofLease for DynamoRecords {
    async fn swap_proof(
        &self,
        owner: &str,
        id: &FileId,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<bool, RecordError> {
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY, s(&key(id.as_str())))
            .expression_attribute_names("#k", KEY)
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_names("#f", PROOF)
            .expression_attribute_values(":o", s(&owner_hash(owner)));
        update = match to {
            Some(to) => update
                .update_expression("SET #f = :to")
                .expression_attribute_values(":to", s(to)),
            None => update.update_expression("REMOVE #f"),
        };
        update = match from {
            Some(from) => update
                .condition_expression("attribute_exists(#k) AND #o = :o AND #f = :from")
                .expression_attribute_values(":from", s(from)),
            None => update.condition_expression(
                "attribute_exists(#k) AND #o = :o AND attribute_not_exists(#f)",
            ),
        };
        condition_held(update.send().await).map_err(store_error)
    }
}
