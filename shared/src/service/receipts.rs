//! Receipts of custody ([`crate::receipts`]): `get_file_receipt` and
//! `GET /files/{file}/receipt`, in this order: the file the caller names
//! (their own, by id or handle) → where it stands (a receipt attests a
//! ready file: any other state is said, as a download would say it) → its
//! record (when it was issued, when it goes, its scan's verdict) → signed
//! with the current key. The JWKS holds that key and every one retired, so
//! a receipt verifies offline long after.

use std::sync::Arc;

use jsonwebtoken::jwk::JwkSet;
use serde::Serialize;

use super::files::Files;
use crate::auth::Caller;
use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::receipts::{Claims, FileClaims, ReceiptError, ScanClaims, Signer, SourceClaims};
use crate::records::{FileRecord, Verdict};
use crate::time::{now_unix, rfc3339};

/// A file's receipt, as a caller gets it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ReceiptAnswer {
    #[allow(missing_docs)]
    pub file_id: FileId,
    /// A compact JWS (ES256).
    pub receipt: String,
    /// Its key in the JWKS.
    pub kid: String,
    /// The JWKS.
    pub jwks_url: String,
}

/// Signs receipts of files, where a key is configured.
#[derive(Clone, Debug)]
pub struct Receipts {
    keys: Option<Arc<dyn Signer>>,
    records: Arc<dyn crate::records::RecordStore>,
    files: Files,
    issuer: String,
    jwks_url: String,
}

impl Receipts {
    /// Receipts signed with `keys` (none: not here) by `issuer` (the
    /// public URL), whose JWKS is at `jwks_url`.
    pub fn new(
        keys: Option<Arc<dyn Signer>>,
        backends: &super::backends::Backends,
        files: Files,
        issuer: String,
        jwks_url: String,
    ) -> Self {
        Self {
            keys,
            records: backends.records.clone(),
            files,
            issuer,
            jwks_url,
        }
    }

    /// Whether receipts are signed here (the tool is listed only then).
    pub fn enabled(&self) -> bool {
        self.keys.is_some()
    }

    /// The public keys: the current one and every one retired (none where
    /// no receipts are signed).
    pub async fn jwks(&self) -> Result<JwkSet, Error> {
        match &self.keys {
            Some(keys) => Ok(keys.keys().await.map_err(unavailable)?.jwks()),
            None => Ok(JwkSet { keys: Vec::new() }),
        }
    }

    /// `body` (an event's, as the outbox keeps it) with the receipt of its
    /// change signed into it ([`stamp_event`]); none signed here: as it is.
    pub async fn stamp(&self, body: &str) -> Result<String, ReceiptError> {
        let Some(keys) = &self.keys else {
            return Ok(body.to_owned());
        };
        let Ok(mut event) = serde_json::from_str::<crate::events::Event>(body) else {
            return Ok(body.to_owned());
        };
        Ok(
            match stamp_event(&**keys, &self.issuer, &mut event).await? {
                true => event.body(),
                false => body.to_owned(),
            },
        )
    }

    /// Where the bytes of the file `record` keeps came from: a copy, a
    /// URL's origin (its import's record), else its upload link.
    async fn source(&self, record: &FileRecord) -> Result<SourceClaims, Error> {
        if record.copy {
            return Ok(SourceClaims::Copy);
        }
        Ok(match self.records.get_import(&record.file.id).await? {
            Some(import) => SourceClaims::Url {
                origin: import.source,
            },
            None => SourceClaims::Upload,
        })
    }

    /// The receipt of the file `file` (an id or a handle) names, for
    /// `caller`.
    pub async fn receipt(&self, caller: &Caller, file: &str) -> Result<ReceiptAnswer, Error> {
        let Some(keys) = &self.keys else {
            return Err(Error::Invalid(
                "this deployment signs no receipts (no receipt key is configured)".to_owned(),
            ));
        };
        let file = self.files.resolve_file(caller, file).await?;
        // A receipt attests a file that is held whole and proven (and
        // clean, where files are scanned); any other state is said.
        self.files.stored(&file).await?.deliverable()?;
        let record = self
            .records
            .get(&file.owner, &file.id)
            .await?
            .ok_or(Error::UnknownFile(file.id.clone()))?;
        let claims = Claims {
            source: Some(self.source(&record).await?),
            ..claims(&self.issuer, "ready", &file, Some(&record))
        };
        let (receipt, kid) = match crate::receipts::sign(&**keys, &claims).await {
            Ok(signed) => signed,
            Err(ReceiptError::Unreachable(why)) => {
                tracing::warn!(file_id = %file.id, error = %why, "the signing key could not be reached: the receipt is pending");
                return Err(Error::ReceiptPending(file.id));
            }
            Err(e) => return Err(Error::internal(std::io::Error::other(e.to_string()))),
        };
        tracing::info!(file_id = %file.id, %kid, "receipt signed");
        Ok(ReceiptAnswer {
            file_id: file.id,
            receipt,
            kid,
            jwks_url: self.jwks_url.clone(),
        })
    }
}

/// Signs the receipt of `event`'s change into its `data`, for the changes
/// of custody (`file.ready`, `file.downloaded`, `file.deleted`,
/// `file.expired`): whether it did (any other event is left as it is). A
/// key that cannot be reached is an error: the event waits for its receipt
/// (its delivery is retried), and is never sent without one. The local
/// server's webhooks and the events function on AWS both stamp this way.
pub async fn stamp_event(
    signer: &dyn Signer,
    issuer: &str,
    event: &mut crate::events::Event,
) -> Result<bool, ReceiptError> {
    use crate::events::EventType;
    let what = match event.kind {
        EventType::Ready => "ready",
        EventType::Downloaded => "downloaded",
        EventType::Deleted => "deleted",
        EventType::Expired => "expired",
        _ => return Ok(false),
    };
    let Some(file) = event.data.file() else {
        return Ok(false);
    };
    let (receipt, _) = crate::receipts::sign(signer, &claims(issuer, what, &file, None)).await?;
    event.data.receipt = Some(receipt);
    Ok(true)
}

/// What a receipt of `event` says of `file`, now, signed as `issuer`; its
/// `record`, where read, adds the times, the detected type and the scan's
/// verdict.
fn claims(issuer: &str, event: &str, file: &FileMeta, record: Option<&FileRecord>) -> Claims {
    let note = record.and_then(|r| r.scan.as_ref());
    let scan = note
        .and_then(|note| note.verdict.as_ref())
        .and_then(|verdict| match verdict {
            Verdict::Clean { by } => Some(ScanClaims {
                verdict: "clean".to_owned(),
                scanner: by.clone(),
            }),
            _ => None,
        });
    Claims {
        iss: issuer.to_owned(),
        sub: file.owner.clone(),
        iat: now_unix(),
        event: event.to_owned(),
        file: FileClaims {
            id: file.id.to_string(),
            sha256: file.sha256,
            size: file.size,
            declared_type: file.content_type.clone(),
            detected_type: note.and_then(|n| n.detected.clone()),
            created_at: record.map(|r| rfc3339(r.created_ms / 1000)),
            expires_at: record.map(|r| rfc3339(r.expires_at)),
        },
        scan,
        source: None,
    }
}

/// The public keys could not be read (KMS did not answer): a clear 503.
fn unavailable(e: ReceiptError) -> Error {
    tracing::warn!(error = %e, "the receipt keys could not be read");
    Error::Busy(crate::store::Busy::Keys)
}
