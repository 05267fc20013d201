//! Download links, both halves ([`Downloads`]), and the inline read
//! ([`small`]). Issuing: the file's object is there and
//! matches its pin → a single-use link bound to the file and the caller.
//! Redeeming, the whole security story of a link in this order: verify the
//! token → refuse it if already spent, before anything is read → find the
//! object → check it against what the link pins ([`crate::service::files::Files::stored`]) →
//! open it, taking a transfer slot where bytes pass through sluice → spend
//! it → deliver, as a redirect to a direct store, as bytes read whole
//! and verified, or as a stream whose last chunk is held back until it
//! verifies.

pub mod small;

use bytes::Bytes;
use serde::Serialize;

use super::base::Base;
use super::files::Files;
use super::files::stored::Stored;
use super::limits::Limits;
use super::links::{Link, Links};
use super::reporter::Reporter;
use crate::auth::Caller;
use crate::curl;
use crate::error::Error;
use crate::events::{Event, EventType};
use crate::file::{FileId, FileMeta};
use crate::ledger::Spend;
use crate::rate::Kind;
use crate::sha::Sha256;
use crate::store::{Access, ByteStream, DownloadAs, StoreError, skip, verified};
use crate::time::{now_unix, rfc3339};
use crate::token::Method;

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
    /// The one line that saves the file (resumable, verified, never over
    /// a file with an error).
    pub command: String,
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
    /// Nothing: the client asked to resume at or past the end of the file
    /// (it has every byte). The link is not spent.
    PastTheEnd {
        /// The file's size.
        size: u64,
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
            Delivery::PastTheEnd { size } => {
                f.debug_struct("PastTheEnd").field("size", size).finish()
            }
        }
    }
}

/// Download links: issued for a stored file, redeemed once.
#[derive(Clone, Debug)]
pub struct Downloads {
    base: Base,
    files: Files,
    limits: Limits,
    links: Links,
    reporter: Reporter,
}

impl Downloads {
    /// Links under the resolver of `endpoints`, for `files`, within `limits`.
    pub fn new(base: Base, files: Files, limits: Limits, links: Links, reporter: Reporter) -> Self {
        Self {
            base,
            files,
            limits,
            links,
            reporter,
        }
    }
}

impl Downloads {
    /// Issues a single-use download link for an uploaded file, asked for by
    /// `owner` (whose rate of links it takes from).
    pub async fn issue_download(
        &self,
        owner: &str,
        file: &FileMeta,
    ) -> Result<DownloadTicket, Error> {
        self.limits.check_rate(Kind::Links, owner)?;
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
        self.limits.check_rate(Kind::Resolve, &caller.owner)?;
        let file = self.files.redeem_handle(caller, handle).await?;
        self.ticket_if_stored(&file).await
    }

    /// A link for a file found stored, taken from its owner's hourly
    /// allowance of download bytes.
    async fn ticket_if_stored(&self, file: &FileMeta) -> Result<DownloadTicket, Error> {
        self.files.stored(file).await?.deliverable()?;
        self.limits.charge_download(file).await?;
        Ok(self.download_ticket(file))
    }

    /// A single-use download link for a file the caller knows is stored
    /// (just stored, or just checked): no request to the store.
    pub(crate) fn download_ticket(&self, file: &FileMeta) -> DownloadTicket {
        let expires_at = now_unix() + self.base.transfers().link_ttl.as_secs() as i64;
        let Link { url, jti } = self.links.download(&file.id, expires_at);
        tracing::info!(file_id = %file.id, %jti, "download link issued");
        // No unreachable-host guard here, unlike the upload line's: with
        // it a long name's answer passes the kilobyte; curl's own message
        // and get_download_url's description say it and what to do.
        let line = curl::download_command(&url, &file.safe_name(), file.size, &file.sha256);
        DownloadTicket {
            file_id: file.id.clone(),
            filename: file.filename.clone(),
            size: file.size,
            sha256: file.sha256,
            content_type: file.content_type.clone(),
            command: line,
            download: DownloadTarget {
                url,
                method: "GET",
                expires_at: rfc3339(expires_at),
            },
        }
    }

    /// Redeems the download link `token`, delivering the file's bytes from
    /// offset `from` on (a client resuming with `Range: bytes=<from>-`; 0
    /// for all). Every way a token can be bad is the same
    /// [`Error::NotFound`], so a caller learns nothing about why.
    ///
    /// A direct store's presigned GET honours the client's `Range` itself.
    /// Here the whole file is still read and verified: only the bytes from
    /// `from` on are sent, and the last is held back until the whole
    /// verifies, so a resumed download never completes a wrong file either.
    pub async fn redeem_link(&self, token: &str, from: u64) -> Result<Delivery, Error> {
        let link = self.links.open_link(token, Method::Get)?;
        let (jti, expires_at) = (link.jti(), link.expires_at.unwrap_or(0));
        let replayed = || {
            tracing::info!(%jti, "spent link presented again");
            Error::NotFound
        };
        // A replay is refused before anything is read: no record, no
        // object, no hash.
        if self.base.ledger().is_spent(&jti).await? {
            return Err(replayed());
        }
        let (file, _) = self.files.linked(&link).await?;
        let info = match self.files.stored(&file).await? {
            Stored::Ready(info) => info,
            // A link is issued for a file that passed its scan alone.
            Stored::Missing | Stored::Verifying | Stored::Scanning | Stored::Refused(_) => {
                return Err(Error::NotFound);
            }
            Stored::Mismatch => {
                tracing::warn!(file_id = %file.id, %jti, "stored object does not match its link");
                return Err(Error::StoredMismatch);
            }
        };
        let downloaded = file.clone();
        let spend = || async {
            // One event: in the spent link's record where the ledger keeps
            // it (DynamoDB's stream), and in the outbox where there is one.
            let event = Event::about(EventType::Downloaded, &downloaded, Some(&jti));
            match self
                .base
                .ledger()
                .spend_reporting(&jti, expires_at, &event.body())
                .await?
            {
                Spend::Fresh => {
                    self.reporter.report(&event, &downloaded).await;
                    Ok(())
                }
                Spend::AlreadySpent => Err(replayed()),
            }
        };
        let key = file.object_key();
        if from > 0 && from >= file.size && !self.base.stores_directly() {
            return Ok(Delivery::PastTheEnd { size: file.size });
        }
        let delivery = match self.base.store().access() {
            // The store recorded the digest it verified on upload: never read here.
            Access::Direct(presign) => {
                spend().await?;
                let disposition = crate::filename::content_disposition(&file.filename);
                let download = DownloadAs {
                    content_disposition: &disposition,
                    content_type: &file.content_type,
                };
                let url = presign
                    .presign_get(
                        &key,
                        &info,
                        download,
                        self.base.transfers().download_url_ttl,
                    )
                    .await?;
                tracing::info!(file_id = %file.id, %jti, "download redirected to the store");
                return Ok(Delivery::Redirect(url));
            }
            Access::Proxied if file.size <= VERIFY_WHOLE_BYTES => {
                // As below: refused a transfer slot, a link spent meanwhile
                // by another redemption is the uniform 404, not a 503.
                let bytes = match self.read_verified(&file).await {
                    Ok(bytes) => bytes.ok_or(Error::NotFound)?,
                    Err(Error::Busy(_)) if self.base.ledger().is_spent(&jti).await? => {
                        return Err(replayed());
                    }
                    Err(e) => return Err(e),
                };
                spend().await?;
                // A delete wins over a download under way.
                if self.base.records().deleted(&file.id).await?.is_some() {
                    return Err(Error::NotFound);
                }
                Delivery::Whole {
                    bytes: Bytes::from(bytes).slice(from as usize..),
                    file,
                }
            }
            Access::Proxied => {
                // Opened first, taking a transfer slot: a download refused
                // for want of a slot keeps its link for a later try. Of
                // many redemptions at once, one spends it; the others drop
                // their slots and are 404, as are those refused a slot once
                // it is spent.
                let stream = match self.base.store().get(&key).await {
                    Ok(stream) => stream.ok_or(Error::NotFound)?,
                    Err(StoreError::Busy(_)) if self.base.ledger().is_spent(&jti).await? => {
                        return Err(replayed());
                    }
                    Err(e) => return Err(e.into()),
                };
                spend().await?;
                let stream = self.unless_deleted(&file, verified(stream, file.size, file.sha256));
                Delivery::Stream {
                    stream: skip(stream, from),
                    file,
                }
            }
        };
        tracing::info!(%jti, "download started");
        Ok(delivery)
    }

    /// `stream` (the whole of `file`, its last chunk held back until it
    /// verifies), cut before its last chunk if the file was deleted while
    /// it went: a delete wins over a download under way, and the client
    /// never holds the whole file (an open file reads on after its path is
    /// removed).
    fn unless_deleted(&self, file: &FileMeta, stream: ByteStream) -> ByteStream {
        use futures_util::StreamExt as _;
        let (base, id, size) = (self.base.clone(), file.id.clone(), file.size);
        let mut sent = 0u64;
        stream
            .then(move |chunk| {
                let last = match &chunk {
                    Ok(bytes) => {
                        sent += bytes.len() as u64;
                        sent >= size
                    }
                    Err(_) => false,
                };
                let (base, id) = (base.clone(), id.clone());
                async move {
                    if last && !matches!(base.records().deleted(&id).await, Ok(None)) {
                        tracing::info!(file_id = %id, "download cut: the file was deleted");
                        return Err(std::io::Error::other("the file was deleted"));
                    }
                    chunk
                }
            })
            .boxed()
    }
}
