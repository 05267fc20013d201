//! Download links, both halves ([`Downloads`]), and the inline read
//! ([`Downloads::read_small`]: for clients that cannot reach the link host
//! at all, at most [`SMALL_FILE_MAX`] bytes through the model, as base64;
//! the size the file pins → with scanning on, its scan passed → read whole
//! → size and digest checked). Issuing: the file's object is there and
//! matches its pin → a single-use link bound to the file and the caller.
//! Redeeming, the whole security story of a link in this order: verify the
//! token → refuse it if already spent, before anything is read → find the
//! object → check it against what the link pins ([`crate::service::files::Files::stored`]) →
//! answer what is wanted ([`ranges::Wanted`]): the headers or the person's
//! page, spending nothing; or bytes: open the object, taking a transfer
//! slot where bytes pass through sluice → charge the bytes to the link's
//! budget → deliver, as a redirect to a direct store, as bytes read whole
//! and verified, or as a stream whose last chunk is held back until it
//! verifies → spend the link as the file's last byte goes out.

pub mod ranges;
mod spending;

use bytes::Bytes;
use serde::Serialize;
use std::sync::Arc;
use tracing::Instrument as _;

use super::backends::Backends;
use super::custody::Reporter;
use super::files::Files;
use super::files::stored::Stored;
use super::limits::Limits;
use super::links::{Link, Links};
use crate::auth::Caller;
use crate::curl;
use crate::error::Error;
use crate::file::{FileId, FileMeta, SMALL_FILE_MAX};
use crate::rate::Kind;
use crate::sha::Sha256;
use crate::store::{Access, ByteStream, DownloadAs, StoreError, skip, take, verified};
use crate::time::{now_unix, rfc3339};
use crate::token::Method;
pub use ranges::{Ranged, Span, Wanted};
pub(crate) use spending::Spending;
#[cfg(feature = "zips")]
pub(crate) use spending::none_deleted;

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
    /// For hosts that fetch files from answers (ChatGPT).
    // The same single-use link: whoever delivers its last byte first
    // spends it. Always here, but in an answer a model reads
    // ([`DownloadTicket::within`]) its optional fields, then itself, give
    // way to the kilobyte.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_ref: Option<FileRef>,
}

/// The most bytes of `structuredContent` a model reads of one file's
/// answer (DESIGN: "What the model reads").
pub const MODEL_READS: usize = 1024;

impl DownloadTicket {
    /// This ticket within `max` bytes of compact JSON, if its file
    /// reference's optional fields (the name and type, beside it in
    /// `filename` and `content_type` too), then the reference itself, can
    /// make it so: what a very long name costs.
    pub fn within(mut self, max: usize) -> Self {
        let fits = |t: &Self| serde_json::to_vec(t).is_ok_and(|v| v.len() <= max);
        for step in 0..3 {
            if fits(&self) {
                break;
            }
            match (step, self.file_ref.as_mut()) {
                (0, Some(r)) => r.file_name = None,
                (1, Some(r)) => r.mime_type = None,
                _ => self.file_ref = None,
            }
        }
        self
    }
}

/// A file reference as the OpenAI Apps SDK reads one in a tool's
/// `structuredContent` (`{file_id, download_url, mime_type?, file_name?}`,
/// the shape of its `openai/fileParams` and of the `FileRef` app frameworks
/// document): the host fetches `download_url` from its servers, so it is
/// the public link.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FileRef {
    #[allow(missing_docs)]
    pub file_id: FileId,
    /// The link (`download.url`).
    pub download_url: String,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
}

/// What a redeemed link delivers.
pub enum Delivery {
    /// A presigned URL of the store (S3), valid for seconds: it honours
    /// the client's `Range` itself.
    Redirect(String),
    /// A small file's bytes in `span`, read whole and verified.
    Whole {
        /// What the link pins.
        file: FileMeta,
        /// The verified bytes of `span`.
        bytes: Bytes,
        /// Which bytes of the file.
        span: Span,
    },
    /// A large file's bytes in `span`, verified as they stream.
    Stream {
        /// What the link pins.
        file: FileMeta,
        /// The bytes; where `span` reaches the end, the stream fails
        /// before its last chunk if the file differs from its pin.
        stream: ByteStream,
        /// Which bytes of the file.
        span: Span,
    },
    /// The headers a `GET` would have (`HEAD`). Nothing spent or charged.
    Head {
        /// What the link pins.
        file: FileMeta,
    },
    /// The person's page for the file (a browser or a link preview
    /// asking for HTML). Nothing spent or charged.
    Page {
        /// What the link pins.
        file: FileMeta,
    },
    /// Nothing: the range asked for starts at or past the end of the file
    /// (a client resuming with every byte). Nothing spent or charged.
    Unsatisfiable {
        /// The file's size.
        size: u64,
    },
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Delivery::Redirect(_) => f.write_str("Redirect(<presigned URL>)"),
            Delivery::Whole { file, span, .. } => f
                .debug_struct("Whole")
                .field("file_id", &file.id)
                .field("span", span)
                .finish_non_exhaustive(),
            Delivery::Stream { file, span, .. } => f
                .debug_struct("Stream")
                .field("file_id", &file.id)
                .field("span", span)
                .finish_non_exhaustive(),
            Delivery::Head { file } | Delivery::Page { file } => f
                .debug_struct("Described")
                .field("file_id", &file.id)
                .finish(),
            Delivery::Unsatisfiable { size } => {
                f.debug_struct("Unsatisfiable").field("size", size).finish()
            }
        }
    }
}

/// A presigned GET of the object at `key` (as `info` describes it) that
/// saves it as `(name, content_type)`, valid for
/// `SLUICE_DOWNLOAD_URL_TTL_SECS`: a download's, or a zip's built in the
/// store.
pub(crate) async fn presigned_attachment(
    transfers: &crate::config::Transfers,
    presign: &dyn crate::store::Presigner,
    key: &crate::file::ObjectKey,
    info: &crate::store::ObjectInfo,
    (name, content_type): (&str, &str),
) -> Result<String, Error> {
    let disposition = crate::filename::content_disposition(name);
    let download = DownloadAs {
        content_disposition: &disposition,
        content_type,
    };
    Ok(presign
        .presign_get(key, info, download, transfers.download_url_ttl)
        .await?)
}

/// Download links: issued for a stored file, redeemed once.
#[derive(Clone, Debug)]
pub struct Downloads {
    store: Arc<dyn crate::store::ObjectStore>,
    records: Arc<dyn crate::records::RecordStore>,
    ledger: Arc<dyn crate::ledger::Ledger>,
    transfers: Arc<crate::config::Transfers>,
    files: Files,
    limits: Limits,
    links: Links,
    reporter: Reporter,
}

impl Downloads {
    /// Links under the resolver of `endpoints`, for `files`, within `limits`.
    pub fn new(
        backends: &Backends,
        files: Files,
        limits: Limits,
        links: Links,
        reporter: Reporter,
    ) -> Self {
        Self {
            store: backends.store.clone(),
            records: backends.records.clone(),
            ledger: backends.ledger.clone(),
            transfers: backends.transfers.clone(),
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

    /// What redeeming the single-use link `jti` (a file's, or a zip's)
    /// charges and spends, until `expires_at`.
    pub(crate) fn spending(&self, jti: String, expires_at: i64) -> Spending {
        Spending::new(
            jti,
            expires_at,
            (self.ledger.clone(), self.records.clone()),
            self.reporter.clone(),
        )
    }

    /// A single-use download link for a file the caller knows is stored
    /// (just stored, or just checked): no request to the store.
    pub(crate) fn download_ticket(&self, file: &FileMeta) -> DownloadTicket {
        let expires_at = now_unix() + self.transfers.link_ttl.as_secs() as i64;
        let Link { url, jti } = self.links.download(&file.id, expires_at);
        tracing::info!(file_id = %file.id, %jti, "download link issued");
        // No unreachable-host guard here, unlike the upload line's: with
        // it a long name's answer passes the kilobyte; curl's own message
        // and get_download_url's description say it and what to do.
        let line = curl::download_command(&url, &file.safe_name(), file.size, &file.sha256);
        let file_ref = FileRef {
            file_id: file.id.clone(),
            download_url: url.clone(),
            mime_type: Some(file.content_type.clone()),
            file_name: Some(file.filename.clone()),
        };
        DownloadTicket {
            file_ref: Some(file_ref),
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

    /// Redeems the download link `token` for what a request on it wants
    /// ([`Wanted`]): its headers or the person's page (both spend
    /// nothing), or bytes of the file. Every way a token can be bad is the
    /// same [`Error::NotFound`], so a caller learns nothing about why.
    ///
    /// Bytes are charged to the link's budget ([`ranges::budget`]: about
    /// twice the file) before any is sent, and the link is spent when the
    /// file's last byte is delivered once, not when a request starts: a
    /// preview's `HEAD`, page or first kilobytes never burn it, and a cut
    /// download resumes on the same link with `Range`. Where sluice sends
    /// the bytes the whole file is still read and verified, and the last
    /// chunk held back until it does; a direct store's presigned GET
    /// honours the client's `Range` itself, and the redirect that hands
    /// out the last byte spends the link (the resolver cannot see the
    /// store's bytes arrive).
    pub async fn redeem_link(&self, token: &str, wanted: Wanted) -> Result<Delivery, Error> {
        let link = self.links.open_link(token, Method::Get)?;
        let spending = self.spending(link.jti(), link.expires_at.unwrap_or(0));
        // A replay is refused before anything is read: no record, no
        // object, no hash.
        if self.ledger.is_spent(&spending.jti).await? {
            return Err(spending.replayed());
        }
        let record = self.files.linked(&link).await?;
        let (file, trace) = (record.file, record.trace);
        let info = match self.files.stored(&file).await? {
            Stored::Ready(info) => info,
            // A link is issued for a file that passed its scan alone.
            Stored::Missing | Stored::Verifying | Stored::Scanning | Stored::Refused(_) => {
                return Err(Error::NotFound);
            }
            Stored::Mismatch => {
                tracing::warn!(file_id = %file.id, jti = %spending.jti, "stored object does not match its link");
                return Err(Error::StoredMismatch);
            }
        };
        let ranged = match wanted {
            Wanted::Head => return Ok(Delivery::Head { file }),
            Wanted::Page => return Ok(Delivery::Page { file }),
            Wanted::Bytes(ranged) => ranged,
        };
        let Some(span) = ranged.span(file.size) else {
            return Ok(Delivery::Unsatisfiable { size: file.size });
        };
        let traced = crate::traces::follow("file.download", file.id.as_str(), trace.as_deref());
        traced.record("sluice.bytes.start", span.start);
        traced.record("sluice.bytes.end", span.end);
        self.deliver(file, info, span, &spending)
            .instrument(traced)
            .await
    }

    /// Delivers `span` of `file` (found stored as `info`), charging and
    /// spending through `spending`: a redirect to a direct store's
    /// presigned GET, bytes read whole and verified, or a stream whose last
    /// chunk is held back until it verifies.
    async fn deliver(
        &self,
        file: FileMeta,
        info: crate::store::ObjectInfo,
        span: Span,
        spending: &Spending,
    ) -> Result<Delivery, Error> {
        let delivery = match self.store.access() {
            // The store recorded the digest it verified on upload: never read here.
            Access::Direct(presign) => {
                spending
                    .redirected(&span, std::slice::from_ref(&file))
                    .await?;
                let url = presigned_attachment(
                    &self.transfers,
                    presign,
                    &file.object_key(),
                    &info,
                    (&file.filename, &file.content_type),
                )
                .await?;
                tracing::info!(file_id = %file.id, jti = %spending.jti, "download redirected to the store");
                return Ok(Delivery::Redirect(url));
            }
            Access::Proxied if file.size <= VERIFY_WHOLE_BYTES => {
                // As below: refused a transfer slot, a link spent meanwhile
                // by another redemption is the uniform 404, not a 503.
                let bytes = match self.read_verified(&file).await {
                    Ok(bytes) => bytes.ok_or(Error::NotFound)?,
                    Err(Error::Busy(_)) if self.ledger.is_spent(&spending.jti).await? => {
                        return Err(spending.replayed());
                    }
                    Err(e) => return Err(e),
                };
                spending.charge(&span).await?;
                if span.reaches_end() {
                    spending.last_byte(std::slice::from_ref(&file)).await?;
                }
                Delivery::Whole {
                    bytes: Bytes::from(bytes).slice(span.start as usize..span.end as usize),
                    file,
                    span,
                }
            }
            Access::Proxied => {
                // Opened first, taking a transfer slot: a download refused
                // for want of a slot keeps its link for a later try. Of
                // many redemptions at once, the first to deliver the last
                // byte spends it; the others are cut before theirs.
                let stream = match self.store.get(&file.object_key()).await {
                    Ok(stream) => stream.ok_or(Error::NotFound)?,
                    Err(StoreError::Busy(_)) if self.ledger.is_spent(&spending.jti).await? => {
                        return Err(spending.replayed());
                    }
                    Err(e) => return Err(e.into()),
                };
                spending.charge(&span).await?;
                let stream = take(
                    skip(verified(stream, file.size, file.sha256), span.start),
                    span.len(),
                );
                Delivery::Stream {
                    stream: spending.at_last_byte(stream, span, &file),
                    file,
                    span,
                }
            }
        };
        tracing::info!(jti = %spending.jti, start = span.start, end = span.end, "download started");
        Ok(delivery)
    }
}

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
        let Some(stream) = self.store.get(&file.object_key()).await? else {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(name: &str) -> DownloadTicket {
        let url = format!("https://files.example.com/l/{}", "t".repeat(52));
        let id = FileId::random();
        DownloadTicket {
            file_id: id.clone(),
            filename: name.to_owned(),
            size: 300_000,
            sha256: Sha256::of(b"x"),
            content_type: "application/pdf".to_owned(),
            command: "c".repeat(400),
            download: DownloadTarget {
                url: url.clone(),
                method: "GET",
                expires_at: "2026-12-07T06:14:33Z".to_owned(),
            },
            file_ref: Some(FileRef {
                file_id: id,
                download_url: url,
                mime_type: Some("application/pdf".to_owned()),
                file_name: Some(name.to_owned()),
            }),
        }
    }

    fn len(t: &DownloadTicket) -> usize {
        serde_json::to_vec(t).unwrap().len()
    }

    #[test]
    fn a_file_reference_gives_way_to_the_kilobyte_field_by_field() {
        // Room for all of it: all of it.
        let whole = ticket("report.pdf").within(MODEL_READS);
        let r = whole.file_ref.as_ref().unwrap();
        assert_eq!(r.file_name.as_deref(), Some("report.pdf"));
        assert_eq!(r.mime_type.as_deref(), Some("application/pdf"));
        assert_eq!(r.download_url, whole.download.url);
        assert!(len(&whole) <= MODEL_READS);
        // Each longer name takes one more field away, then the reference.
        let mut dropped = 0;
        for n in (10..400).step_by(5) {
            let t = ticket(&"n".repeat(n));
            let full = len(&t);
            let fitted = t.within(MODEL_READS);
            let now = match &fitted.file_ref {
                Some(r) => usize::from(r.file_name.is_none()) + usize::from(r.mime_type.is_none()),
                None => 3,
            };
            assert!(now >= dropped, "{n}: fields come back as the name grows");
            dropped = now;
            if now < 3 {
                assert!(len(&fitted) <= MODEL_READS, "{n}");
            }
            if full <= MODEL_READS {
                assert_eq!(now, 0, "{n}: nothing dropped when it fits");
            }
        }
        assert_eq!(dropped, 3, "a long enough name leaves the reference out");
    }
}
