//! A resumable upload where sluice receives the bytes (a store that
//! streams, [`crate::store::StreamStore`]): the upload link is the tus 1.0
//! upload URL of a file `request_upload` created already, pinned to its
//! size and SHA-256 (a person's page that sends while it hashes pins the
//! size, and declares the SHA-256 with its last bytes: `Repr-Digest`,
//! written once to the record). In this order: `HEAD` asks where it stands
//! ([`Uploads::upload_offset`]) → `PATCH` appends from there
//! ([`Uploads::append_upload`]): verify the link → refuse a store that does
//! not stream, an offset that is not where it stands, a declared length
//! past the file, the last bytes of a file whose digest is to come sent
//! without it, before any byte is read → a digest declared is recorded
//! (once: another is refused) → stream the body into the store,
//! which hashes each byte once and checkpoints the hash state with the bytes
//! → at the last byte, the pinned digest: the file is ready at once (no
//! completion request); any other digest: the bytes are freed,
//! `file.rejected` goes out, and the answer says to ask again.
//!
//! The HTTP side of tus (its headers, its status codes) is the issuer's;
//! this speaks the domain.

use super::Uploads;
use serde::Serialize;
use tracing::Instrument as _;

use super::put::{Upload, until_expiry};
use crate::error::Error;
use crate::store::{ByteStream, StoreError, StreamStore, idle_timeout};

/// Where a resumable upload stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamAt {
    /// The bytes kept so far (the whole size once the file is stored).
    pub offset: u64,
    /// The file's size: the upload's length.
    pub size: u64,
    /// When the link stops taking bytes (Unix seconds).
    pub expires_at: i64,
}

impl Uploads {
    /// The store's resumable uploads, where it has them.
    fn streams(&self) -> Result<&dyn StreamStore, Error> {
        // A store without streams (S3) takes bytes at its presigned URLs:
        // the link is not a tus upload there.
        self.store.stream().ok_or(Error::NotFound)
    }

    /// Whether a file's digest may come with its last bytes here
    /// ([`crate::service::intake::Intake::digest_may_come_last`]).
    pub(crate) fn digest_may_come_last(&self) -> bool {
        crate::service::intake::Intake::digest_may_come_last(&*self.store)
    }

    /// Stores `file`, whose link speaks a stream, now if it is empty: there
    /// is nothing to send, and a resumable upload standing at its length is
    /// finished to every tus client (which then sends nothing). Its pinned
    /// digest was checked to be the empty one when it was asked for.
    pub(crate) async fn stream_empty(&self, file: &crate::file::FileMeta) -> Result<(), Error> {
        if file.size != 0 {
            return Ok(());
        }
        let nothing: ByteStream = Box::pin(futures_util::stream::empty());
        match self
            .store
            .put(&file.object_key(), 0, file.sha256, nothing)
            .await
        {
            Ok(()) | Err(StoreError::AlreadyExists) => {}
            Err(e) => return Err(e.into()),
        }
        self.files.gate().stored_now(file, None).await
    }

    /// Where the upload of link `token` stands.
    pub async fn upload_offset(&self, token: &str) -> Result<StreamAt, Error> {
        let streams = self.streams()?;
        let Upload {
            file, expires_at, ..
        } = self.upload_of(token).await?;
        let offset = streams.offset(&file.object_key(), file.size).await?;
        Ok(StreamAt {
            offset,
            size: file.size,
            expires_at,
        })
    }

    /// Appends `body` (of `declared` bytes, where the request said) at
    /// `offset` to the upload of link `token`, with the file's digest where
    /// the request declares it (`digest`: a file whose digest is to come
    /// declares it at the latest with its last bytes); where the upload
    /// stands then. The last byte makes the file ready, or frees the bytes
    /// when they are not the file pinned.
    pub async fn append_upload(
        &self,
        token: &str,
        offset: u64,
        declared: Option<u64>,
        digest: Option<crate::Sha256>,
        body: ByteStream,
    ) -> Result<StreamAt, Error> {
        let streams = self.streams()?;
        let Upload {
            file,
            jti,
            expires_at,
            trace,
        } = self.upload_of(token).await?;
        let span = crate::traces::follow("file.bytes", file.id.as_str(), trace.as_deref());
        self.limits
            .check_rate(crate::rate::Kind::Appends, file.id.as_str())?;
        if let Some(len) = declared
            && offset.checked_add(len).is_none_or(|end| end > file.size)
        {
            // A finished link answers as it does to a PUT.
            if streams.offset(&file.object_key(), file.size).await? == file.size {
                return Err(Error::AlreadyUploaded);
            }
            return Err(Error::TooLarge(format!(
                "this upload is {} bytes: {len} more from byte {offset} go past its end; nothing was written",
                file.size
            )));
        }
        let file = match digest {
            Some(sha256) => self.files.declare(file, sha256).await?,
            // Bytes that may be the last, with nothing to check them by:
            // refused before any is read.
            None if file.digest().is_none()
                && declared.is_none_or(|len| offset.saturating_add(len) >= file.size) =>
            {
                return Err(Error::DigestToCome);
            }
            None => file,
        };
        let body = idle_timeout(body, self.transfers.body_idle_timeout);
        let body = self.arrivals.count_from(&file.id, offset, body);
        let key = file.object_key();
        let append = streams
            .append(&key, file.size, file.sha256, offset, body)
            .instrument(span.clone());
        let Some(appended) = until_expiry(expires_at, append).await else {
            tracing::info!(file_id = %file.id, %jti, "upload ended at its link's expiry");
            return Err(Error::UploadExpired);
        };
        let appended = match appended {
            Ok(a) => a,
            Err(StoreError::Mismatch(m)) => {
                tracing::info!(file_id = %file.id, %jti, error = %m, "stream not the file pinned: freed");
                self.reporter.reject(&file, &jti).await;
                return Err(Error::NotTheFile(m));
            }
            Err(e) => {
                tracing::info!(file_id = %file.id, %jti, offset, error = %e, "append refused or cut short");
                return Err(e.into());
            }
        };
        if appended.complete {
            self.stored_whole(&file, &jti, span).await?;
        }
        Ok(StreamAt {
            offset: appended.offset,
            size: file.size,
            expires_at,
        })
    }
}
