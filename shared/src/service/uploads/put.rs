//! An upload link redeemed: the bytes of a file arriving at sluice itself
//! (proxied stores only; a direct store takes them at its presigned URL).
//! In this order ([`Uploads::accept`]): where the store is direct, the
//! client sent on to a presigned PUT → verify the link → refuse
//! a declared length other than the pinned size, before any byte is read →
//! stream the body into the store, which checks size and digest and keeps
//! nothing on a mismatch, under an idle timeout and the link's deadline →
//! mark the file ready.

use super::Uploads;
use std::time::Duration;
use tracing::Instrument as _;

use serde::Serialize;

use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::service::intake::Intake;
use crate::sha::Sha256;
use crate::store::{Access, ByteStream, idle_timeout};
use crate::time::now_unix;
use crate::token::Method;

/// How long after its link expires an upload may still finish.
pub const UPLOAD_GRACE_SECS: i64 = 10;

/// What a stored upload answers.
#[derive(Debug, Clone, Serialize)]
pub struct Uploaded {
    /// The file's id.
    pub file_id: FileId,
    /// Its size.
    pub size: u64,
    /// Its verified digest.
    pub sha256: Sha256,
}

/// What a PUT to an upload link gets, decided by where the store takes
/// the bytes (the mirror of a download's
/// [`crate::service::downloads::Delivery`]).
#[derive(Debug)]
pub enum Accepted {
    /// The store takes them: a presigned PUT minted now, where the client
    /// is sent (307) before any of its body is read.
    Redirect(String),
    /// Sluice took them: stored, checked against the pin, the file ready
    /// (or held for its scan).
    Stored(Uploaded),
}

/// Runs an upload's write until its link expires, with
/// [`UPLOAD_GRACE_SECS`] more: an upload started before the link expired
/// may finish shortly after, never trickle on for ever. `None`: it ran out.
pub(crate) async fn until_expiry<T>(
    expires_at: i64,
    write: impl std::future::Future<Output = T>,
) -> Option<T> {
    let left = u64::try_from(expires_at + UPLOAD_GRACE_SECS - now_unix()).unwrap_or(0);
    tokio::time::timeout(Duration::from_secs(left), write)
        .await
        .ok()
}

/// An upload link verified, and the file it is for.
pub(crate) struct Upload {
    pub(crate) file: FileMeta,
    pub(crate) jti: String,
    /// The link's end, never after its file's record's: an upload link
    /// (and every URL minted behind it) dies with the file it is for.
    pub(crate) expires_at: i64,
    /// The trace the file's life is in ([`crate::traces`]).
    pub(crate) trace: Option<String>,
}

impl Uploads {
    /// The last byte of `file` is stored through link `jti` (one PUT, or a
    /// stream's last append): through the gate (proof, scan, ready), in the
    /// file's trace (`span`).
    pub(crate) async fn stored_whole(
        &self,
        file: &FileMeta,
        jti: &str,
        span: tracing::Span,
    ) -> Result<(), Error> {
        tracing::info!(file_id = %file.id, %jti, size = file.size, "upload stored");
        self.files.gate().arrived(file, jti).instrument(span).await
    }

    /// The origin uploads go to when it is not sluice's own (S3's, for the
    /// page's Content-Security-Policy); `None` where sluice takes them.
    pub async fn store_origin(&self) -> Option<String> {
        let Access::Direct(presign) = self.store.access() else {
            return None;
        };
        let probe = crate::file::ObjectKey::from_stored("files/origin-probe".into());
        let presigned = presign
            .presign_put(
                &probe,
                0,
                Sha256::of(b""),
                "application/octet-stream",
                std::time::Duration::from_secs(60),
            )
            .await
            .ok()?;
        let url = url::Url::parse(&presigned.url).ok()?;
        Some(url.origin().ascii_serialization())
    }

    /// What `GET /u/{token}/to` answers for a file sent in one PUT: where
    /// to PUT it and the headers to send ([`curl::part_target`]'s form),
    /// for the batch script to check and use.
    pub async fn put_target(&self, token: &str) -> Result<String, Error> {
        let upload = self.upload_of(token).await?;
        let intake = Intake::of(&*self.store, &self.transfers, &upload.file);
        let target = self
            .upload_target(
                (&upload.file, &intake),
                upload.expires_at,
                crate::service::uploads::issue::Reader::Page,
            )
            .await?;
        let url = match self.store.access() {
            Access::Direct(_) => target.url,
            Access::Proxied => format!("{}/u/{token}", self.endpoints.issuer_base()),
        };
        let headers = target
            .headers
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("content-length"))
            .map(|(k, v)| (k.as_str(), v.as_str()));
        Ok(crate::curl::part_target(&url, headers))
    }

    /// Verifies upload link `token` and finds its file. A short link whose
    /// record has expired is refused like any dead link (404).
    pub(crate) async fn upload_of(&self, token: &str) -> Result<Upload, Error> {
        let link = self.links.open_link(token, Method::Put)?;
        let (jti, link_expires) = (link.jti(), link.expires_at.unwrap_or(0));
        let record = self.files.linked(&link).await?;
        let expires_at = link_expires.min(record.expires_at);
        if record.expires_at <= now_unix() {
            tracing::info!(%jti, file_id = %record.file.id, "upload link of an expired file");
            return Err(Error::NotFound);
        }
        Ok(Upload {
            file: record.file,
            jti,
            expires_at,
            trace: record.trace,
        })
    }

    /// Where the bytes of upload link `token` go: with a direct store, a
    /// presigned PUT minted now for what is left of the link's life (so the
    /// model only ever sees the short link, and a presigned URL, with the
    /// session token of the role that signed it, never enters its context);
    /// otherwise the link itself.
    pub async fn upload_location(&self, token: &str) -> Result<String, Error> {
        let Upload {
            file, expires_at, ..
        } = self.upload_of(token).await?;
        let left = expires_at - now_unix();
        match self.store.access() {
            Access::Direct(presign) => {
                let ttl = Duration::from_secs(u64::try_from(left).unwrap_or(1).max(1));
                let p =
                    crate::service::uploads::issue::presign_pinned_put(presign, &file, ttl).await?;
                tracing::info!(file_id = %file.id, "direct upload URL minted");
                Ok(p.url)
            }
            Access::Proxied => Ok(format!("{}/u/{token}", self.endpoints.issuer_base())),
        }
    }

    /// A PUT of `body` to the upload link `token`: sent on to a presigned
    /// PUT where the store takes the bytes ([`Uploads::upload_location`]),
    /// or stored here ([`Uploads::accept_upload`]).
    pub async fn accept(
        &self,
        token: &str,
        declared: Option<u64>,
        body: ByteStream,
    ) -> Result<Accepted, Error> {
        match self.store.access() {
            Access::Direct(_) => Ok(Accepted::Redirect(self.upload_location(token).await?)),
            Access::Proxied => Ok(Accepted::Stored(
                self.accept_upload(token, declared, body).await?,
            )),
        }
    }

    /// Stores `body` for the upload link `token`, enforcing what the link
    /// pins, where sluice takes the bytes ([`Uploads::accept`] decides).
    /// `declared` is the request's `Content-Length`, if it had one.
    async fn accept_upload(
        &self,
        token: &str,
        declared: Option<u64>,
        body: ByteStream,
    ) -> Result<Uploaded, Error> {
        let Upload {
            file,
            jti,
            expires_at,
            trace,
        } = self.upload_of(token).await?;
        let span = crate::traces::follow("file.bytes", file.id.as_str(), trace.as_deref());
        if let Some(len) = declared
            && len != file.size
        {
            let why = format!(
                "the body is {len} bytes but this link accepts exactly {}; nothing was stored",
                file.size
            );
            return Err(if len > file.size {
                Error::TooLarge(why)
            } else {
                Error::Invalid(why)
            });
        }
        let body = idle_timeout(body, self.transfers.body_idle_timeout);
        let body = self.arrivals.count(&file.id, body);
        let key = file.object_key();
        let put = self
            .store
            .put(&key, file.size, file.sha256, body)
            .instrument(span.clone());
        let Some(stored) = until_expiry(expires_at, put).await else {
            tracing::info!(file_id = %file.id, %jti, "upload ended at its link's expiry");
            return Err(Error::UploadExpired);
        };
        if let Err(e) = stored {
            tracing::info!(file_id = %file.id, %jti, error = %e, "upload refused");
            if matches!(e, crate::store::StoreError::Mismatch(_)) {
                self.reporter.reject(&file, &jti).await;
            }
            return Err(e.into());
        }
        self.stored_whole(&file, &jti, span).await?;
        Ok(Uploaded {
            file_id: file.id,
            size: file.size,
            sha256: file.sha256,
        })
    }
}
