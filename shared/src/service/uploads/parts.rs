//! Uploads in parts, where the store receives the bytes (S3): a file over
//! the single-PUT size is sent as the parts of its [`Plan`], through its
//! upload link, in this order: the upload line fetches its script
//! (`GET /u/{token}/sh`) → asks which parts are stored (`GET …/parts`) →
//! for each missing part asks where to send it, declaring its SHA-256
//! (`POST …/parts/{n}?sha256=`: a presigned UploadPart that signs it, so
//! the store refuses other bytes) and sends it there → asks to complete
//! (`POST …/complete`): every part there, then the parts joined into the
//! file's object, which must come out the size and SHA-256 declared when
//! the file was issued (the proof: parts each self-consistent but whose
//! whole is another file never turn ready). An object the store joined is
//! proven by the service ([`crate::service::proof`]). A file already complete
//! refuses any further part or completion. Where sluice receives the bytes
//! a file is one resumable stream instead ([`super::stream`]).

use super::Uploads;
use std::time::Duration;
use tracing::Instrument as _;

use super::put::Uploaded;
use crate::curl;
use crate::error::Error;
use crate::file::FileMeta;
use crate::multipart::Plan;
use crate::service::intake::Intake;
use crate::service::proof::{Held, PROOF_SLICE, Proved};
use crate::sha::Sha256;
use crate::store::PartStore;
use crate::store::{Access, Joined, StoreError};

/// How long a part's presigned URL lives: minted as the part is about to be
/// sent, it needs minutes, not the upload's whole life.
const PART_URL_TTL: Duration = Duration::from_secs(15 * 60);

/// A file uploaded in parts, as its link names it, with the store's parts.
struct Parted<'a> {
    parts: &'a dyn PartStore,
    file: FileMeta,
    plan: Plan,
    jti: String,
    expires_at: i64,
    /// The trace the file's life is in.
    trace: Option<String>,
}

impl Uploads {
    /// The file upload link `token` names, if it goes in parts.
    async fn parted(&self, token: &str) -> Result<Parted<'_>, Error> {
        let super::put::Upload {
            file,
            jti,
            expires_at,
            trace,
        } = self.upload_of(token).await?;
        let Intake::Parts(parts, plan) = Intake::of(&*self.store, &self.transfers, &file) else {
            return Err(Error::Invalid(
                "this file is uploaded in one PUT to its link, not in parts".into(),
            ));
        };
        Ok(Parted {
            parts,
            file,
            plan,
            jti,
            expires_at,
            trace,
        })
    }

    /// Refuses anything more for a file whose object is complete.
    async fn not_complete(&self, file: &FileMeta) -> Result<(), Error> {
        match self.store.head(&file.object_key()).await? {
            Some(_) => Err(Error::AlreadyUploaded),
            None => Ok(()),
        }
    }

    /// The script the upload line of `token` runs ([`curl::PARTS_SCRIPT`],
    /// the same for every upload: the line pins it), to a live link only.
    pub async fn parts_script(&self, token: &str) -> Result<&'static str, Error> {
        self.parted(token).await?;
        Ok(curl::PARTS_SCRIPT)
    }

    /// The parts of `token`'s file stored so far: all of them once they
    /// are joined (S3 lists no parts of a completed upload), so a rerun of
    /// the line goes straight to the completion.
    pub async fn stored_parts(&self, token: &str) -> Result<Vec<u32>, Error> {
        let parted = self.parted(token).await?;
        let key = parted.file.object_key();
        if self.store.head(&key).await?.is_some() {
            return Ok(parted.plan.numbers().collect());
        }
        Ok(parted.parts.stored_parts(&key).await?)
    }

    /// Where and how to send part `n` of `token`'s file, whose SHA-256 its
    /// sender declares ([`curl::part_target`]).
    pub async fn part_target(&self, token: &str, n: u32, sha256: Sha256) -> Result<String, Error> {
        let parted = self.parted(token).await?;
        let len = planned_len(&parted.plan, n)?;
        let file = &parted.file;
        self.not_complete(file).await?;
        // A part stored is not replaced (on S3 a new URL for it would be):
        // whoever else holds the link cannot swap a part the owner sent.
        if parted.parts.has_part(&file.object_key(), n).await? {
            return Err(already_stored(n));
        }
        match self.store.access() {
            // A presigned UploadPart minted now, for minutes: a long upload
            // never depends on one URL's life, nor on the signing role's.
            Access::Direct(presign) => {
                let left = u64::try_from(parted.expires_at - crate::time::now_unix()).unwrap_or(1);
                let ttl = self
                    .transfers
                    .upload_ttl
                    .min(PART_URL_TTL)
                    .min(Duration::from_secs(left.max(1)));
                let p = presign
                    .presign_part(&file.object_key(), n, len, sha256, ttl)
                    .await?;
                tracing::info!(file_id = %file.id, part = n, "part URL minted");
                // curl sets Content-Length from the part itself.
                let headers = p
                    .headers
                    .iter()
                    .filter(|(k, _)| !k.eq_ignore_ascii_case("content-length"))
                    .map(|(k, v)| (k.as_str(), v.as_str()));
                Ok(curl::part_target(&p.url, headers))
            }
            // Where sluice receives the bytes a file is one stream.
            Access::Proxied => Err(Error::bug("a proxied store takes no parts")),
        }
    }

    /// Completes `token`'s file: every part there, joined and proven to be
    /// the size and SHA-256 declared when it was issued; then it is ready.
    /// A proof longer than [`Transfers::proof_budget`](crate::config::Transfers) goes on at
    /// the next call ([`Completion::Verifying`]).
    pub async fn complete_parts(&self, token: &str) -> Result<Completion, Error> {
        let parted = self.parted(token).await?;
        self.limits
            .check_rate(crate::rate::Kind::Completions, parted.file.id.as_str())?;
        let file = &parted.file;
        let mut held = self
            .proofs
            .hold_proof(file, self.transfers.proof_budget)
            .await?;
        if held.is_proven() {
            held.release(&self.proofs).await;
            return Err(Error::AlreadyUploaded);
        }
        let span = crate::traces::follow("file.proof", file.id.as_str(), parted.trace.as_deref());
        let outcome = self
            .join_and_prove(&parted, &mut held)
            .instrument(span)
            .await;
        held.release(&self.proofs).await;
        match outcome {
            Ok(Proved::Proven) => {}
            Ok(Proved::Partly(proven)) => {
                return Ok(Completion::Verifying {
                    proven,
                    size: file.size,
                });
            }
            Err(StoreError::Mismatch(m)) => {
                tracing::warn!(file_id = %file.id, error = %m, "parts joined into another file");
                // The link stays usable: a fresh upload in parts under it,
                // so a part someone else sent costs a rerun, not the file.
                self.reporter.reject(file, &parted.jti).await;
                self.begin_upload(file).await?;
                return Err(Error::PartsNotTheFile(m));
            }
            Err(e) => return Err(e.into()),
        }
        tracing::info!(file_id = %file.id, jti = %parted.jti, size = file.size, "parts joined and proven");
        self.files.gate().arrived(file, &parted.jti).await?;
        Ok(Completion::Ready(Uploaded {
            file_id: file.id.clone(),
            size: file.size,
            sha256: file.sha256,
        }))
    }

    /// Joins `parted`'s parts, and proves the whole where the store did
    /// not; a whole that is not the file is discarded with its parts.
    async fn join_and_prove(
        &self,
        parted: &Parted<'_>,
        held: &mut Held,
    ) -> Result<Proved, StoreError> {
        let (file, plan, parts) = (&parted.file, &parted.plan, parted.parts);
        let key = file.object_key();
        let proved = match parts.join(&key, plan, file.sha256).await? {
            Joined::Proven => {
                held.proven(None);
                Ok(Proved::Proven)
            }
            Joined::Unproven { etag } => {
                let slice = plan.part_size.min(PROOF_SLICE);
                self.proofs
                    .prove(held, etag, slice, self.transfers.proof_budget)
                    .await
            }
        };
        match proved {
            Err(StoreError::Mismatch(m)) => {
                parts.abort(&key, plan).await?;
                Err(StoreError::Mismatch(m))
            }
            // Joined again under the same key since the proof began (after
            // a mismatch): the next completion proves the new object.
            Err(StoreError::Changed) => {
                held.forget();
                Ok(Proved::Partly(0))
            }
            other => other,
        }
    }
}

/// How far a completion went.
#[derive(Debug, Clone)]
pub enum Completion {
    /// Joined and proven: the file is ready.
    Ready(Uploaded),
    /// Joined; its proof goes on at the next completion.
    Verifying {
        /// Bytes proven so far.
        proven: u64,
        /// The file's size.
        size: u64,
    },
}

/// The refusal of a part sent again.
fn already_stored(n: u32) -> Error {
    Error::Invalid(format!("part {n} is already stored: it is not sent twice"))
}

/// The planned size of part `n`, or the refusal of a part beyond the plan.
fn planned_len(plan: &Plan, n: u32) -> Result<u64, Error> {
    plan.len(n).ok_or_else(|| {
        Error::Invalid(format!(
            "there is no part {n}: this file has parts 1 to {}",
            plan.count
        ))
    })
}
