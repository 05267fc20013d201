//! The inline fallback, storing: for clients that cannot reach the upload
//! host at all, at most [`SMALL_FILE_MAX`] bytes through the model, as
//! base64. Check the size → check the digest the caller gave → issue and
//! store the file (`Uploads::store_inline`). Reading is the downloads'
//! ([`crate::service::downloads::Downloads::read_small`]).

use super::Uploads;
use serde::Serialize;

use crate::error::Error;
use crate::file::FileId;
use crate::service::uploads::issue::Counted;
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

impl Uploads {
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
}
