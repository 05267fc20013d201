//! Download links, both halves. Issuing: the file's object is there and
//! matches its pin → a single-use link bound to the file and the caller.
//! Redeeming, the whole security story of a link in this order: verify the
//! token → refuse it if already spent, before anything is read → find the
//! object → check it against what the link pins ([`Sluice::stored`]) →
//! open it, taking a transfer slot where bytes pass through sluice → spend
//! it → deliver, as a redirect to a direct store, as bytes read whole
//! and verified, or as a stream whose last chunk is held back until it
//! verifies.

use bytes::Bytes;
use serde::Serialize;

use super::{Sluice, Stored};
use crate::auth::Caller;
use crate::curl;
use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::ledger::Spend;
use crate::rate::Kind;
use crate::sha::Sha256;
use crate::store::{Access, ByteStream, DownloadAs, StoreError, verified};
use crate::time::{now_unix, rfc3339};
use crate::token::{LinkToken, Method};

/// Files up to this size are read and verified whole before the first byte
/// is sent, so a mismatch is a clean 409. Larger files stream with their last
/// chunk held back until they verify.
pub const VERIFY_WHOLE_BYTES: u64 = 1024 * 1024;

/// Where to GET a file's bytes.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DownloadTarget {
    /// The single-use URL.
    pub url: String,
    /// Always `GET`.
    pub method: &'static str,
    /// When the URL stops working (RFC 3339).
    pub expires_at: String,
}

/// The answer to a download request.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DownloadTicket {
    /// The file's id.
    pub file_id: FileId,
    /// The name it was uploaded under.
    pub filename: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex digest.
    pub sha256: Sha256,
    /// The media type.
    pub content_type: String,
    /// The link.
    pub download: DownloadTarget,
    /// A ready-to-run download command.
    pub curl: String,
}

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
    /// Issues a single-use download link for an uploaded file, asked for by
    /// `owner` (whose rate of links it takes from).
    pub async fn issue_download(
        &self,
        owner: &str,
        file: &FileMeta,
    ) -> Result<DownloadTicket, Error> {
        self.check_rate(Kind::Links, owner)?;
        self.ticket_if_stored(file).await
    }

    /// A backend (or the handle's owner) turns a handle into the file's
    /// pinned description and a single-use download link: the caller's rate
    /// of resolutions → the handle verified for the caller → the object
    /// found and matching its pin.
    pub async fn resolve_handle(
        &self,
        caller: &Caller,
        handle: &str,
    ) -> Result<DownloadTicket, Error> {
        self.check_rate(Kind::Resolve, &caller.owner)?;
        let file = self.redeem_handle(caller, handle)?;
        self.ticket_if_stored(&file).await
    }

    /// A link for a file found stored, taken from its owner's hourly
    /// allowance of download bytes.
    async fn ticket_if_stored(&self, file: &FileMeta) -> Result<DownloadTicket, Error> {
        match self.stored(file).await? {
            Stored::Ready(_) => {
                self.charge_download(file)?;
                Ok(self.download_ticket(file))
            }
            Stored::Missing => Err(Error::NotUploaded),
            Stored::Mismatch => Err(Error::StoredMismatch),
        }
    }

    /// Takes `file`'s size from its owner's hourly allowance of download
    /// bytes (`SLUICE_DOWNLOAD_BYTES_PER_HOUR`): what bounds one user's
    /// egress, on S3 as well as here.
    pub(crate) fn charge_download(&self, file: &FileMeta) -> Result<(), Error> {
        self.parts().limits.charge_download(&file.owner, file.size)
    }

    /// A single-use download link for a file the caller knows is stored
    /// (just stored, or just checked): no request to the store.
    pub(crate) fn download_ticket(&self, file: &FileMeta) -> DownloadTicket {
        let link = LinkToken::new(
            Method::Get,
            file.clone(),
            now_unix() + self.parts().link_ttl.as_secs() as i64,
        );
        tracing::info!(file_id = %file.id, jti = %link.jti, "download link issued");
        let url = format!(
            "{}/links/{}",
            self.resolver_base(),
            link.encode(self.keys())
        );
        DownloadTicket {
            file_id: file.id.clone(),
            filename: file.filename.clone(),
            size: file.size,
            sha256: file.sha256,
            content_type: file.content_type.clone(),
            curl: curl::download_command(&url, &file.safe_name()),
            download: DownloadTarget {
                url,
                method: "GET",
                expires_at: rfc3339(link.expires_at),
            },
        }
    }

    /// Verifies a link token for `method`. Every failure is the same
    /// [`Error::NotFound`], so a caller learns nothing about why; the
    /// reason is logged at debug.
    pub(crate) fn verify_link(&self, token: &str, method: Method) -> Result<LinkToken, Error> {
        LinkToken::decode(self.keys(), token, method).map_err(|e| {
            tracing::debug!(reason = %e, %method, "link refused");
            Error::NotFound
        })
    }

    /// Redeems the download link `token`. Every way a token can be bad is
    /// the same [`Error::NotFound`], so a caller learns nothing about why.
    pub async fn redeem_link(&self, token: &str) -> Result<Delivery, Error> {
        let link = self.verify_link(token, Method::Get)?;
        let file = link.file;
        // A replay is refused before the object is touched: no read, no hash.
        if self.ledger().is_spent(&link.jti).await? {
            tracing::info!(jti = %link.jti, "spent link presented again");
            return Err(Error::NotFound);
        }
        let info = match self.stored(&file).await? {
            Stored::Ready(info) => info,
            Stored::Missing => return Err(Error::NotFound),
            Stored::Mismatch => {
                tracing::warn!(file_id = %file.id, jti = %link.jti, "stored object does not match its link");
                return Err(Error::StoredMismatch);
            }
        };
        let spend = || async {
            match self.ledger().spend(&link.jti, link.expires_at).await? {
                Spend::Fresh => Ok(()),
                Spend::AlreadySpent => {
                    tracing::info!(jti = %link.jti, "spent link presented again");
                    Err(Error::NotFound)
                }
            }
        };
        let key = file.object_key();
        let delivery = match self.store().access() {
            // The store recorded the digest it verified on upload: never read here.
            Access::Direct(presign) => {
                spend().await?;
                let disposition = crate::filename::content_disposition(&file.filename);
                let download = DownloadAs {
                    content_disposition: &disposition,
                    content_type: &file.content_type,
                };
                let url = presign
                    .presign_get(&key, &info, download, self.parts().download_url_ttl)
                    .await?;
                tracing::info!(file_id = %file.id, jti = %link.jti, "download redirected to the store");
                return Ok(Delivery::Redirect(url));
            }
            Access::Proxied if file.size <= VERIFY_WHOLE_BYTES => {
                let bytes = self.read_verified(&file).await?.ok_or(Error::NotFound)?;
                spend().await?;
                Delivery::Whole {
                    bytes: bytes.into(),
                    file,
                }
            }
            Access::Proxied => {
                // Opened first, taking a transfer slot: a download refused
                // for want of a slot keeps its link for a later try. Of
                // many redemptions at once, one spends it; the others drop
                // their slots and are 404, as are those refused a slot once
                // it is spent.
                let stream = match self.store().get(&key).await {
                    Ok(stream) => stream.ok_or(Error::NotFound)?,
                    Err(StoreError::Busy(_)) if self.ledger().is_spent(&link.jti).await? => {
                        tracing::info!(jti = %link.jti, "spent link presented again");
                        return Err(Error::NotFound);
                    }
                    Err(e) => return Err(e.into()),
                };
                spend().await?;
                Delivery::Stream {
                    stream: verified(stream, file.size, file.sha256),
                    file,
                }
            }
        };
        tracing::info!(jti = %link.jti, "download started");
        Ok(delivery)
    }
}
