//! The inline fallback, for clients that cannot reach the upload or link
//! host at all: at most [`SMALL_FILE_MAX`] bytes through the model, as
//! base64. Storing: check the size → check the digest the caller gave →
//! issue and store the file (`Sluice::store_inline`). Reading: check the
//! size the file pins → read it whole → check size and digest → answer.

use serde::Serialize;

use super::Sluice;
use super::issue::Counted;
use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::sha::Sha256;

pub use crate::file::SMALL_FILE_MAX;

/// The answer to a small-file upload.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SmallUpload {
    /// `$uploadedFile:<token>`: what the model passes to actions.
    pub handle: String,
    /// The new file's id.
    pub file_id: FileId,
    /// The name it was stored under.
    pub filename: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex digest.
    pub sha256: Sha256,
}

impl Sluice {
    /// Stores a small file sent inline (base64 through the model): at most
    /// [`SMALL_FILE_MAX`] bytes, and only if `sha256` matches.
    pub async fn upload_small(
        &self,
        owner: &str,
        filename: String,
        data: Vec<u8>,
        sha256: Sha256,
        content_type: Option<String>,
    ) -> Result<SmallUpload, Error> {
        if data.len() > SMALL_FILE_MAX {
            return Err(Error::TooLargeInline {
                filename: "the data".into(),
                size: data.len() as u64,
                limit: SMALL_FILE_MAX,
            });
        }
        let actual = Sha256::of(&data);
        if actual != sha256 {
            return Err(Error::Invalid(format!(
                "the data decodes to {} bytes with sha256 {actual}, not {sha256}: nothing was stored; \
                 check the base64 and the digest",
                data.len()
            )));
        }
        let (file, handle) = self
            .store_inline(owner, filename, data, sha256, content_type, Counted::Yes)
            .await?;
        Ok(SmallUpload {
            handle,
            file_id: file.id,
            filename: file.filename,
            size: file.size,
            sha256: file.sha256,
        })
    }

    /// Reads a small file whole, verified, for the base64 fallback.
    pub async fn read_small(&self, file: &FileMeta) -> Result<Vec<u8>, Error> {
        if file.size > SMALL_FILE_MAX as u64 {
            return Err(Error::TooLargeInline {
                filename: file.filename.clone(),
                size: file.size,
                limit: SMALL_FILE_MAX,
            });
        }
        self.read_verified(file).await?.ok_or(Error::NotUploaded)
    }

    /// Reads a file's object whole (callers bound its size) and checks it
    /// against the pinned size and sha256; `None` if there is no object.
    pub(crate) async fn read_verified(&self, file: &FileMeta) -> Result<Option<Vec<u8>>, Error> {
        let Some(stream) = self.store().get(&file.object_key()).await? else {
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
