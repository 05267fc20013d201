//! The proof's lease: one conditional update.

use rusqlite::params;

use super::*;
use crate::records::lease::ProofLease;

#[async_trait::async_trait]
impl ProofLease for SqliteRecords {
    async fn swap_proof(
        &self,
        owner: &str,
        id: &FileId,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<bool, RecordError> {
        let (owner, seq, id) = (owner_hash(owner), id.sequence(), id.to_string());
        let (from, to) = (from.map(str::to_owned), to.map(str::to_owned));
        self.db
            .write(move |c| {
                c.prepare_cached(
                    "UPDATE files SET proof = ?4
                     WHERE seq = ?1 AND file_id = ?2 AND owner = ?3 AND proof IS ?5",
                )?
                .execute(params![seq, id, owner, to, from])
                .map(|changed| changed == 1)
            })
            .await
    }
}
