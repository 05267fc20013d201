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
    /// A file whose malware scan goes on: nothing is sent until it passes.
    #[error(
        "this file is being scanned for malware, and nothing of it is sent until it is found clean: ask again in a moment"
    )]
    Scanning,
    /// A file its malware scan refused: its bytes were deleted.
    #[error(
        "this file was rejected by its {by} ({0}); its bytes were deleted and it is never sent",
        by = rejecter(.0)
    )]
    ScanRejected(String),
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
    /// A download link that has delivered its byte budget (about twice the
    /// file) without its last byte being delivered once: a leaked link is
    /// not a mirror.
    #[error(
        "this link has delivered all the bytes it may (twice the file's size); ask for a new link (get_download_url)"
    )]
    LinkBudgetSpent,
    /// A zip that could not be built (one of its files changed or went
    /// while it was written, or the store failed): nothing is delivered.
    #[error(
        "this zip could not be built ({0}); nothing was spent: ask get_download_urls for a new one"
    )]
    ZipNotBuilt(String),
    /// A browser page that cannot be used, in words for the person.
    #[error("{0}")]
    PageRefused(&'static str),
    /// A browser page already used for another file, in words for the person.
    #[error("{0}")]
    PageConflict(&'static str),
    /// A page's start without the file's digest, where the store cannot
    /// take it with the last bytes (it takes no stream).
    #[error(
        "this link takes the file's sha256 before its bytes: hash the file, then start again; nothing was issued"
    )]
    DigestFirst,
    /// The last bytes of an upload whose digest is to come, sent without it.
    #[error(
        "this upload's sha256 is declared with its last bytes (a Repr-Digest: sha-256=:…: header on the request that sends them), and this request has none; nothing was written"
    )]
    DigestToCome,
    /// A digest declared for an upload that has another: declared before,
    /// or pinned when the file was asked for.
    #[error(
        "this upload's sha256 is {0}, declared before, and this request declares another; nothing was written: its bytes are checked against the first"
    )]
    DigestDeclared(crate::sha::Sha256),
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
    /// An append to a resumable upload at another offset than the one it
    /// stands at; nothing was written.
    #[error(
        "this upload stands at byte {0}: send from there (ask its Upload-Offset with HEAD); nothing was written"
    )]
    OffsetConflict(u64),
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
    /// A ready file's receipt could not be signed: the signing key (KMS)
    /// did not answer. The file stays ready; asking again signs it.
    #[error(
        "file {0} is ready, but its receipt is pending: the signing key could not be reached; ask again in a few seconds"
    )]
    ReceiptPending(FileId),
    /// The local store's quota is reached.
    #[error("the store is full: nothing was stored; delete files or raise SLUICE_QUOTA_BYTES")]
    StoreFull,
    /// The disk under the data directory is full.
    #[error(
        "the server's disk is full: nothing was stored and the link can be used again once space is freed"
    )]
    DiskFull,
    /// The caller's token was not granted a scope this needs (a step of a
    /// call whose own scope it has: an action that imports a file).
    #[error(
        "this needs the '{0}' scope, which your token was not granted; nothing was fetched or run"
    )]
    NotGranted(crate::auth::Scope),
    /// An action that is not in the catalog.
    #[error("there is no action named {0:?}")]
    UnknownAction(String),
    /// An action's field was refused: which one, and why.
    #[error("Field \"{field}\": {reason}")]
    Field {
        /// The field (or `field[i]`).
        field: String,
        /// What is wrong with it.
        reason: FieldError,
    },
    /// An action's fields given as something other than an object.
    #[error("fields must be an object of field names to values")]
    FormNotAnObject,
    /// A string that is not a browser upload's id of this caller.
    #[error("this is not an upload_id of yours")]
    NotAnUploadId,
    /// A page cursor that was not issued to this caller.
    #[error(
        "this cursor was not returned to you: pass next_cursor exactly, or leave it out for the first page"
    )]
    ForeignCursor,
    /// Every part of an upload arrived, but together they are another file
    /// than the one declared: the parts were discarded, and the same link
    /// takes a fresh upload.
    #[error(
        "every part arrived, but together they are not the file declared ({0}); the parts were \
         discarded: run the same upload command again to send the file once more"
    )]
    PartsNotTheFile(Mismatch),
    /// Every byte of a resumable upload arrived, and they are not the file
    /// declared: its bytes were freed.
    #[error(
        "every byte arrived, but they are not the file declared ({0}); they were discarded: \
         ask for a new upload with the file's own size and sha256"
    )]
    NotTheFile(Mismatch),
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

    /// The error's name, for a metric's label: one of a fixed set, never
    /// anything a caller sent.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Invalid(_) => "invalid",
            Error::TooLarge(_) => "too_large",
            Error::HandleExpired => "handle_expired",
            Error::NotAHandle => "not_a_handle",
            Error::OtherUsersHandle => "other_users_handle",
            Error::UnknownFile(_) => "unknown_file",
            Error::FileExpired(_) => "file_expired",
            Error::NotUploaded => "not_uploaded",
            Error::Verifying => "verifying",
            Error::StoredMismatch => "stored_mismatch",
            Error::Scanning => "scanning",
            Error::ScanRejected(_) => "scan_rejected",
            Error::TooLargeInline { .. } => "too_large_inline",
            Error::NotFound => "not_found",
            Error::LinkBudgetSpent => "link_budget_spent",
            Error::ZipNotBuilt(_) => "zip_not_built",
            Error::PageRefused(_) => "page_refused",
            Error::PageConflict(_) => "page_conflict",
            Error::DigestFirst => "digest_first",
            Error::DigestToCome => "digest_to_come",
            Error::DigestDeclared(_) => "digest_declared",
            Error::UploadExpired => "upload_expired",
            Error::AlreadyUploaded => "already_uploaded",
            Error::UploadInProgress => "upload_in_progress",
            Error::OffsetConflict(_) => "offset_conflict",
            Error::Completing => "completing",
            Error::BodyMismatch(_) => "body_mismatch",
            Error::BodyStalled => "body_stalled",
            Error::BodyBroken(_) => "body_broken",
            Error::Limited { .. } => "limited",
            Error::Busy(_) => "busy",
            Error::StoreUnavailable => "store_unavailable",
            Error::LedgerUnavailable => "ledger_unavailable",
            Error::ReceiptPending(_) => "receipt_pending",
            Error::StoreFull => "store_full",
            Error::DiskFull => "disk_full",
            Error::NotGranted(_) => "not_granted",
            Error::UnknownAction(_) => "unknown_action",
            Error::Field { .. } => "field",
            Error::FormNotAnObject => "form_not_an_object",
            Error::NotAnUploadId => "not_an_upload_id",
            Error::ForeignCursor => "foreign_cursor",
            Error::PartsNotTheFile(_) => "parts_not_the_file",
            Error::NotTheFile(_) => "not_the_file",
            Error::Upstream(_) => "upstream",
            Error::Internal(_) => "internal",
        }
    }

    /// A digest declared that is sluice's mark of one still to come
    /// ([`crate::Sha256::TO_COME`]), refused wherever a client declares one.
    pub fn the_mark_declared() -> Self {
        Error::Invalid(
            "this sha256 is sluice's mark of a digest still to come, not a file's: give the file's own"
                .into(),
        )
    }

    /// A refusal of one of an action's fields.
    pub fn field(field: &str, reason: FieldError) -> Self {
        Error::Field {
            field: field.to_owned(),
            reason,
        }
    }
}

/// Why one of an action's fields was refused: data, so that each adapter
/// words it (the MCP adapter adds the tool to call next); these words say
/// what is wrong, never which tool or route to use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// The action has no field of this name.
    #[error("action {action} has no such field; its fields are: {}", or_none(.known))]
    NoSuchField {
        /// The action.
        action: String,
        /// Its fields.
        known: Vec<String>,
    },
    /// A required field left out.
    #[error("is required")]
    Required,
    /// A list of files given as something else.
    #[error("takes an array of files (handles or data: URIs), even for one file")]
    NotAList,
    /// A file given as something other than a string.
    #[error("takes a file: a `$uploadedFile:` handle or a data: URI")]
    NotAFileValue,
    /// A handle past its expiry.
    #[error("this handle has expired")]
    HandleExpired,
    /// A string that is not a handle of this deployment.
    #[error("this is not a valid handle")]
    NotAHandle,
    /// A handle issued to someone else.
    #[error("this handle was issued to another user")]
    OtherUsersHandle,
    /// A data: URI that does not parse, and why.
    #[error("{0}: send data:<type>;name=<name>;base64,<data>, or a file's handle")]
    BadDataUri(String),
    /// A file id where a handle goes.
    #[error("this looks like a file id, not a handle")]
    FileIdNotHandle,
    /// Plain text where a file goes.
    #[error("this is plain text, not a file")]
    NotAFile,
    /// A file of a media type the field does not accept.
    #[error("{name} is {content_type}, but this field accepts only {}", .accepted.join(", "))]
    WrongType {
        /// The file's name.
        name: String,
        /// Its media type.
        content_type: String,
        /// What the field accepts.
        accepted: Vec<String>,
    },
    /// A file over the field's size limit.
    #[error("{name} is {size} bytes, over this field's limit of {max} bytes")]
    TooLarge {
        /// The file's name.
        name: String,
        /// Its size.
        size: u64,
        /// The field's limit.
        max: u64,
    },
    /// More files in one call than allowed.
    #[error("one call may pass at most {0} files (counting each repeat): send fewer")]
    TooManyFiles(u32),
    /// A value not among the field's choices.
    #[error("{value:?} is not one of: {}", .allowed.join(", "))]
    NotOneOf {
        /// The value given.
        value: String,
        /// The choices.
        allowed: Vec<String>,
    },
    /// A value that is not a date.
    #[error("{0:?} is not a date (YYYY-MM-DD) or date-time (RFC 3339)")]
    NotADate(String),
    /// A value of another JSON type than the field's.
    #[error("takes {0}")]
    Takes(&'static str),
    /// A stored file that took too long to read.
    #[error("reading the file took longer than {0} s; nothing complete was sent: try again later")]
    ReadTimedOut(u64),
    /// A file whose bytes are gone.
    #[error("{0} is no longer stored")]
    NoLongerStored(String),
    /// A file whose bytes have not arrived.
    #[error("{0} has not been uploaded yet")]
    NotUploaded(String),
    /// A file in parts whose proof goes on.
    #[error(
        "{0} is still being verified: run its upload command again to finish it, then call this again"
    )]
    Verifying(String),
    /// Stored bytes that differ from what the handle pins.
    #[error(
        "the stored file does not match its pinned size and sha256, so the action was not run with it"
    )]
    StoredMismatch,
    /// A file whose malware scan goes on.
    #[error(
        "{0} is being scanned for malware, so the action was not run with it: ask again in a moment"
    )]
    Scanning(String),
    /// A file given inline (a `data:` URI) where every file is scanned for
    /// malware before it is used: inline bytes would reach the upstream
    /// unscanned.
    #[error(
        "this server scans every file for malware before it is used, so a file cannot be given inline as a data: URI; nothing was sent"
    )]
    InlineWhileScanning,
    /// A file its malware scan refused.
    #[error(
        "{0} was rejected by its {by} ({1}), so the action was not run with it; its bytes were deleted",
        by = rejecter(.1)
    )]
    ScanRejected(String, String),
    /// Another refusal of a handle, in the service's words.
    #[error("{0}")]
    Refused(String),
}

/// `items` joined with commas, or "none".
fn or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

impl FieldError {
    /// The refusal of a handle in a field, from the service's refusal.
    pub fn of_handle(e: &Error) -> Self {
        match e {
            Error::HandleExpired => FieldError::HandleExpired,
            Error::NotAHandle => FieldError::NotAHandle,
            Error::OtherUsersHandle => FieldError::OtherUsersHandle,
            other => FieldError::Refused(other.to_string()),
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
            // Deleted under way: the link is no more, as any dead link.
            StoreError::Gone => Error::NotFound,
            StoreError::MissingPart(n) => Error::Invalid(format!(
                "part {n} has not been uploaded: run the same upload command again to send it"
            )),
            StoreError::Busy(Busy::Upload) => Error::UploadInProgress,
            StoreError::Busy(Busy::Completing) => Error::Completing,
            // Only a proof reads pinned to an entity tag: it starts over.
            StoreError::Changed => Error::Verifying,
            StoreError::Busy(busy) => Error::Busy(busy),
            StoreError::Mismatch(m) => Error::BodyMismatch(m),
            StoreError::Offset { at } => Error::OffsetConflict(at),
            StoreError::PastEnd { size } => Error::TooLarge(format!(
                "the body goes past this upload's {size} bytes; nothing past them was kept"
            )),
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

/// A record store's refusal or failure: the same words as the bytes' store
/// (a record store out of reach is storage unavailable, a full disk is
/// one), whose conversion says them once.
impl From<crate::records::RecordError> for Error {
    fn from(e: crate::records::RecordError) -> Self {
        Error::from(StoreError::from(e))
    }
}

/// What rejected a file, from its refusal's words: its type check
/// (`type: …`) or its malware scan (`malware: …`, `unscanned: …`).
pub fn rejecter(why: &str) -> &'static str {
    if why.starts_with("type:") {
        "type check"
    } else {
        "malware scan"
    }
}
