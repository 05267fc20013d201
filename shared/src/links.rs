//! Redeeming a download link: the whole security story of a link in one
//! place, in this order: verify the token → refuse it if already spent,
//! before anything is read → find the object → check its size (and the
//! store's digest) against what the link pins → spend it → deliver, as a
//! redirect to the store, as bytes read whole and verified, or as a stream
//! whose last chunk is held back until it verifies.

use bytes::Bytes;

use crate::error::ApiError;
use crate::file::FileMeta;
use crate::ledger::Spend;
use crate::service::{Sluice, stored_mismatch};
use crate::store::{ByteStream, DownloadAs, verified};
use crate::token::Method;

/// Files up to this size are read and verified whole before the first byte
/// is sent, so a mismatch is a clean 409. Larger files stream with their last
/// chunk held back until they verify.
pub const VERIFY_WHOLE_BYTES: u64 = 1024 * 1024;

/// What a redeemed link delivers.
pub enum Delivery {
    /// A presigned URL of the store (S3), valid for seconds.
    Redirect(String),
    /// A small file, read whole and verified.
    Whole {
        /// What the link pins.
        file: FileMeta,
        /// The verified bytes.
        bytes: Bytes,
    },
    /// A large file, verified as it streams.
    Stream {
        /// What the link pins.
        file: FileMeta,
        /// The bytes; the stream fails before its last chunk if they differ.
        stream: ByteStream,
    },
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Delivery::Redirect(_) => f.write_str("Redirect(<presigned URL>)"),
            Delivery::Whole { file, bytes } => f
                .debug_struct("Whole")
                .field("file_id", &file.id)
                .field("bytes", &bytes.len())
                .finish(),
            Delivery::Stream { file, .. } => f
                .debug_struct("Stream")
                .field("file_id", &file.id)
                .finish_non_exhaustive(),
        }
    }
}

impl Sluice {
    /// Redeems the download link `token`. Every way a token can be bad is
    /// the same [`ApiError::NotFound`], so a caller learns nothing about why.
    pub async fn redeem_link(&self, token: &str) -> Result<Delivery, ApiError> {
        let link = self.verify_link(token, Method::Get)?;
        let file = link.file;
        let key = file.object_key();
        // A replay is refused before the object is touched: no read, no hash.
        if self.ledger().is_spent(&link.jti).await? {
            tracing::info!(jti = %link.jti, "spent link presented again");
            return Err(ApiError::NotFound);
        }
        let info = self.store().head(&key).await?.ok_or(ApiError::NotFound)?;
        // A direct store (S3) records the digest it verified on upload and
        // is never read here, so it must have one; elsewhere the object is
        // vouched for by reading it, below.
        let direct = self.store().is_direct();
        if info.contradicts(&file) || (direct && info.sha256.is_none()) {
            tracing::warn!(file_id = %file.id, jti = %link.jti, "stored object does not match its link");
            return Err(stored_mismatch());
        }
        let spend = || async {
            match self.ledger().spend(&link.jti, link.expires_at).await? {
                Spend::Fresh => Ok(()),
                Spend::AlreadySpent => {
                    tracing::info!(jti = %link.jti, "spent link presented again");
                    Err(ApiError::NotFound)
                }
            }
        };
        if direct {
            spend().await?;
            let disposition = crate::filename::content_disposition(&file.filename);
            let download = DownloadAs {
                content_disposition: &disposition,
                content_type: &file.content_type,
            };
            let url = self
                .store()
                .presign_get(&key, &info, download, self.parts().download_url_ttl)
                .await?
                .ok_or_else(|| {
                    ApiError::internal(std::io::Error::other("a direct store must presign"))
                })?;
            tracing::info!(file_id = %file.id, jti = %link.jti, "download redirected to the store");
            return Ok(Delivery::Redirect(url));
        }
        let delivery = if file.size <= VERIFY_WHOLE_BYTES {
            let bytes = self.read_verified(&file).await?.ok_or(ApiError::NotFound)?;
            spend().await?;
            Delivery::Whole {
                bytes: bytes.into(),
                file,
            }
        } else {
            spend().await?;
            let stream = self.store().get(&key).await?.ok_or(ApiError::NotFound)?;
            Delivery::Stream {
                stream: verified(stream, file.size, file.sha256),
                file,
            }
        };
        tracing::info!(jti = %link.jti, "download started");
        Ok(delivery)
    }
}
