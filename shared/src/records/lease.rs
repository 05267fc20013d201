//! The proof of an object the service proves by reading (`service::proof`),
//! kept in its file's record and moved by one caller at a time, on any
//! replica: a conditional swap.

use super::error::RecordError;
use super::files::FileRecords;
use crate::file::FileId;

/// The proof's lease, on the file records that keep each proof.
#[async_trait::async_trait]
pub trait ProofLease: FileRecords + Send + Sync {
    /// Replaces the proof of file `id` of `owner` with `to` if it is `from`
    /// now (`None`: no proof), in one conditional write: `false`, and
    /// nothing written, if it is not (another completion moved it, on any
    /// replica) or there is no such record.
    async fn swap_proof(
        &self,
        owner: &str,
        id: &FileId,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<bool, RecordError>;
}
