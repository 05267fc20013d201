//! The inline fallback, reading: for clients that cannot reach the link
//! host at all, at most [`SMALL_FILE_MAX`] bytes through the model, as
//! base64. Check the size the file pins → (scanning on) its scan passed →
//! read it whole → check size and digest → answer.

use super::Downloads;
use crate::error::Error;
use crate::file::{FileMeta, SMALL_FILE_MAX};
use crate::sha::Sha256;

impl Downloads {
    /// Reads a small file whole, verified, for the base64 fallback.
    pub async fn read_small(&self, file: &FileMeta) -> Result<Vec<u8>, Error> {
        if file.size > SMALL_FILE_MAX as u64 {
            return Err(Error::TooLargeInline {
                filename: file.filename.clone(),
                size: file.size,
                limit: SMALL_FILE_MAX,
            });
        }
        // With scanning on, only bytes that passed their scan.
        if self.files.gate().scanning() {
            self.files.stored(file).await?.deliverable()?;
        }
        self.read_verified(file).await?.ok_or(Error::NotUploaded)
    }

    /// Reads a file's object whole (callers bound its size) and checks it
    /// against the pinned size and sha256; `None` if there is no object.
    pub(crate) async fn read_verified(&self, file: &FileMeta) -> Result<Option<Vec<u8>>, Error> {
        let Some(stream) = self.base.store().get(&file.object_key()).await? else {
            return Ok(None);
        };
        let chunks: Vec<bytes::Bytes> = futures_util::TryStreamExt::try_collect(stream)
            .await
            .map_err(Error::internal)?;
        let data = chunks.concat();
        if data.len() as u64 != file.size || Sha256::of(&data) != file.sha256 {
            tracing::warn!(file_id = %file.id, "stored object does not match its pinned size and sha256");
            return Err(Error::StoredMismatch);
        }
        Ok(Some(data))
    }
}
