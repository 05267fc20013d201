//! [`Error`]: what went wrong in the service, in the domain's words.
//!
//! The service ([`crate::service`]) returns these; it never speaks HTTP or
//! MCP. Two adapters put them on the wire, each in exactly one place:
//! [`crate::http::HttpError`] (a status, a JSON `{message}` body and, for
//! auth, a challenge) and the `mcp` function's tool errors, which add what
//! the model should do next. A message here says what happened and, where
//! it matters, that nothing was stored or spent; it never names a tool or a
//! route.

use crate::file::FileId;
use crate::ledger::LedgerError;
use crate::sha::Mismatch;
use crate::store::{Busy, StoreError};

/// A refusal or failure of the service.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request is wrong, and the message says how.
    #[error("{0}")]
    Invalid(String),
    /// A request larger than allowed (a body, a picked file).
    #[error("{0}")]
    TooLarge(String),
    /// A handle past its expiry.
    #[error("this handle has expired")]
    HandleExpired,
    /// A string that is not a handle of this deployment.
    #[error(
        "this is not a valid handle: pass the exact \"$uploadedFile:…\" value the upload request returned"
    )]
    NotAHandle,
    /// A handle issued to someone else.
    #[error("this handle was issued to another user")]
    OtherUsersHandle,
    /// A file id that is not among the caller's files.
    #[error("no file {0} among your files")]
    UnknownFile(FileId),
    /// A file whose record has expired.
    #[error("file {0} has expired")]
    FileExpired(FileId),
    /// A file issued but whose bytes have not arrived.
    #[error("this file has not been uploaded yet")]
    NotUploaded,
    /// A file in parts whose whole digest is still being proven.
    #[error(
        "this file is still being verified (its parts are joined; the proof of its sha256 goes on): run its upload command again to finish it, or try again in a moment"
    )]
    Verifying,
    /// The stored bytes differ from what was pinned: nothing is sent.
    #[error("the stored file does not match its pinned size and sha256; it was not sent")]
    StoredMismatch,
    /// A file too large for the inline (base64) fallback.
    #[error("{filename} is {size} bytes, over the {limit}-byte limit of the inline fallback")]
    TooLargeInline {
        /// The file's name (or "the data").
        filename: String,
        /// Its size.
        size: u64,
        /// The fallback's limit.
        limit: usize,
    },
    /// A link, page start or object that is not there, whatever the reason:
    /// one answer, so a token's state never leaks.
    #[error("not found")]
    NotFound,
    /// A browser page that cannot be used, in words for the person.
    #[error("{0}")]
    PageRefused(&'static str),
    /// A browser page already used for another file, in words for the person.
    #[error("{0}")]
    PageConflict(&'static str),
    /// An upload link that expired while its upload was still arriving.
    #[error("the upload link expired before the upload finished; nothing was stored")]
    UploadExpired,
    /// A file whose bytes were already stored (a link stores one upload).
    #[error("this file was already uploaded; the link cannot be used again")]
    AlreadyUploaded,
    /// Another upload of the same link is in progress.
    #[error(
        "an upload to this link is already in progress: a link stores one upload; wait for it to finish, then check the file"
    )]
    UploadInProgress,
    /// Another completion of the same upload in parts is joining and
    /// proving it.
    #[error(
        "this upload's parts are already being joined and proven: wait a moment, then run the same upload command again to finish"
    )]
    Completing,
    /// An upload body of another size or digest; nothing was stored.
    #[error("{0}; nothing was stored and the link can be used again")]
    BodyMismatch(Mismatch),
    /// An upload body that stopped arriving.
    #[error(
        "the upload stopped sending data, so it was ended; nothing was stored and the link can be used again"
    )]
    BodyStalled,
    /// An upload body that broke off.
    #[error("the upload was interrupted ({0}); nothing was stored and the link can be used again")]
    BodyBroken(std::io::Error),
    /// The caller asked too often, or has too much waiting: nothing was done.
    #[error("{message}")]
    Limited {
        /// What happened and when to come back, for a person.
        message: String,
        /// Seconds until a retry can succeed.
        retry_after: u64,
    },
    /// Every slot of some kind is taken; the same request may succeed soon.
    #[error("{0}: nothing was read or stored; try again in a few seconds")]
    Busy(Busy),
    /// File storage cannot answer right now.
    #[error(
        "file storage cannot answer right now; nothing was stored or spent: try again in a few seconds"
    )]
    StoreUnavailable,
    /// The ledger cannot answer right now.
    #[error("the ledger cannot answer right now; nothing was spent: try again in a few seconds")]
    LedgerUnavailable,
    /// The local store's quota is reached.
    #[error("the store is full: nothing was stored; delete files or raise SLUICE_QUOTA_BYTES")]
    StoreFull,
    /// The disk under the data directory is full.
    #[error(
        "the server's disk is full: nothing was stored and the link can be used again once space is freed"
    )]
    DiskFull,
    /// An action that is not in the catalog.
    #[error("there is no action named {0:?}")]
    UnknownAction(String),
    /// An action's field was refused: which one, and why.
    #[error("Field \"{field}\": {reason}")]
    Field {
        /// The field (or `field[i]`).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An action's upstream failed, and the message quotes it.
    #[error("{0}")]
    Upstream(String),
    /// A failure of sluice itself: logged once where it reaches the wire,
    /// answered as "internal error".
    #[error("internal error: {0}")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// Wraps an internal failure.
    pub fn internal(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Internal(Box::new(e))
    }

    /// An internal failure described in words (a broken invariant).
    pub fn bug(what: &'static str) -> Self {
        Error::internal(std::io::Error::other(what))
    }

    /// A refusal of one of an action's fields.
    pub fn field(field: &str, reason: impl std::fmt::Display) -> Self {
        Error::Field {
            field: field.to_owned(),
            reason: reason.to_string(),
        }
    }
}

impl From<LedgerError> for Error {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::Unavailable(why) => {
                tracing::warn!(reason = %why, "ledger unavailable");
                Error::LedgerUnavailable
            }
            other => Error::internal(other),
        }
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::QuotaExceeded { .. } => Error::StoreFull,
            StoreError::AlreadyExists => Error::AlreadyUploaded,
            StoreError::MissingPart(n) => Error::Invalid(format!(
                "part {n} has not been uploaded: run the same upload command again to send it"
            )),
            StoreError::Busy(Busy::Upload) => Error::UploadInProgress,
            StoreError::Busy(Busy::Completing) => Error::Completing,
            // Only a proof reads pinned to an entity tag: it starts over.
            StoreError::Changed => Error::Verifying,
            StoreError::Busy(busy) => Error::Busy(busy),
            StoreError::Mismatch(m) => Error::BodyMismatch(m),
            StoreError::Body(e) if e.kind() == std::io::ErrorKind::TimedOut => Error::BodyStalled,
            StoreError::Body(e) => Error::BodyBroken(e),
            StoreError::Unavailable(why) => {
                tracing::warn!(reason = %why, "store unavailable");
                Error::StoreUnavailable
            }
            StoreError::Io(e) if e.kind() == std::io::ErrorKind::StorageFull => {
                tracing::error!(error = %e, "the disk holding the data directory is full");
                Error::DiskFull
            }
            StoreError::Io(e) => Error::internal(e),
        }
    }
}
