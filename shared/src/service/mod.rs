//! [`Sluice`]: the service every function calls in-process. Each file here
//! is one concern, and states the order of its steps in its first lines:
//!
//! - [`issue`]: a file is asked for → checked → admitted under the caller's
//!   limits → recorded pending → its handle and upload target signed.
//! - [`uploads`]: bytes arrive on an upload link (proxied stores only) →
//!   verified while they stream → stored → the file marked ready.
//! - [`stream`]: the same link as a resumable (tus) upload: where it stands
//!   → bytes appended from there, hashed once → the last byte decides.
//! - [`links`]: a download link is issued for a stored file, and redeemed:
//!   verify → refuse if spent → find → check the pin → spend → deliver.
//! - [`files`]: which file a caller means (a handle, a file id), what its
//!   record says, and the caller's files a page at a time.
//! - [`limits`]: the per-user rate and the caps on pending files.
//! - [`small`]: the inline (base64) fallback for files of at most 16 KiB.
//! - [`browser`]: a page for the person, its start, and its status.
//! - [`actions`]: running an action whose File fields take handles.
//! - [`batch`]: many files in one call and one line, each way.
//! - [`delete`]: a file deleted before it expires, its bytes with it.
//! - [`multipart`]: uploads in parts where the store receives the bytes
//!   (S3): the plan → each part's target → the join → the proof.
//! - `proof`: proving an object the store cannot vouch for, a slice at a
//!   time, its state in the file's record under a lease.
//! - [`progress`]: how far a person's upload has come, for a status call.
//! - [`waits`]: who may wait on `get_upload_status`, and for how long.
//! - `verify`: a link, upload or download, verified in one place, and the
//!   file it names.
//!
//! The service speaks the domain: its errors are [`crate::Error`]s, which
//! the HTTP adapter ([`crate::http`]) and the MCP tools put on the wire.
//! Below it sit the codecs and the storage traits ([`crate::store`],
//! [`crate::records`], [`crate::ledger`]), which know nothing of it.

pub mod actions;
pub mod batch;
pub mod browser;
pub mod delete;
pub mod files;
pub mod issue;
pub mod limits;
pub mod links;
pub mod multipart;
pub mod progress;
mod proof;
pub mod small;
pub mod stream;
pub mod uploads;
mod verify;
pub mod waits;

use std::fmt;
use std::sync::Arc;

use url::Url;

use crate::actions::Actions;
use crate::auth::AccessVerifier;
use crate::config::Transfers;
use crate::error::Error;
use crate::file::FileMeta;
use crate::keys::Keyring;
use crate::ledger::Ledger;
use crate::rate::Limits;
use crate::records::{PendingCaps, RecordStore};
use crate::store::{Access, ObjectInfo, ObjectStore, Pin};

/// Everything a [`Sluice`] is assembled from: its backends, keys, where it
/// is reached, and the setting groups [`crate::Config`] read, held as they
/// are.
#[derive(Debug)]
pub struct Assembly {
    /// Signing keys.
    pub keys: Keyring,
    /// Bearer token validation.
    pub access: AccessVerifier,
    /// Where objects live.
    pub store: Arc<dyn ObjectStore>,
    /// Where spent tokens are recorded.
    pub ledger: Arc<dyn Ledger>,
    /// Where file records live.
    pub records: Arc<dyn RecordStore>,
    /// Where clients reach sluice: the public URL, each function's base,
    /// the MCP URL, the widget's origins (the `urls` group, resolved).
    pub endpoints: crate::config::Endpoints,
    /// How files move (lifetimes, sizes, time limits).
    pub transfers: Transfers,
    /// The largest MCP request body.
    pub mcp_max_body_bytes: usize,
    /// Authorization servers for the protected-resource metadata.
    pub auth_servers: Vec<Url>,
    /// The configured actions (none: the action tools are not listed).
    pub actions: Actions,
    /// How fast one user may ask for files, links, resolutions and
    /// actions, and how often one browser page may be started.
    pub limits: Limits,
    /// Per-user caps on files waiting for their bytes.
    pub pending_caps: PendingCaps,
}

/// The shared state of every function: cheap to clone. Beside what it is
/// assembled from, it counts the bytes arriving through this process
/// ([`progress::Arrivals`]) and the status calls waiting in it
/// ([`waits::Waits`]).
#[derive(Clone)]
pub struct Sluice(Arc<Assembly>, progress::Arrivals, waits::Waits);

impl fmt::Debug for Sluice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sluice")
            .field("public_url", &self.0.endpoints.public.as_str())
            .finish_non_exhaustive()
    }
}

/// Where a file's object stands, as far as the store can tell without
/// reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// No object yet.
    Missing,
    /// The object is there, and the store vouches for it: a direct store
    /// recorded the pinned digest; a proxied store verified every byte on
    /// its way in (and reads verify again).
    Ready(ObjectInfo),
    /// The object differs from the pin, or a direct store cannot vouch
    /// for its digest: it is never delivered or counted as uploaded.
    Mismatch,
    /// Joined from an upload's parts; the proof of its whole digest goes
    /// on: not delivered yet.
    Verifying,
}

impl Sluice {
    /// Assembles the state.
    pub fn new(assembly: Assembly) -> Self {
        Self(
            Arc::new(assembly),
            progress::Arrivals::default(),
            waits::Waits::default(),
        )
    }

    /// The bytes arriving through this process, per file.
    pub(crate) fn arrivals(&self) -> &progress::Arrivals {
        &self.1
    }

    /// The status calls waiting in this process.
    pub(crate) fn waits(&self) -> &waits::Waits {
        &self.2
    }

    /// How files move: lifetimes, sizes and time limits.
    pub fn transfers(&self) -> &Transfers {
        &self.0.transfers
    }

    /// The largest MCP request body.
    pub fn mcp_max_body_bytes(&self) -> usize {
        self.0.mcp_max_body_bytes
    }

    /// The authorization servers the protected-resource metadata names.
    pub fn auth_servers(&self) -> &[Url] {
        &self.0.auth_servers
    }

    /// Per-user rates.
    pub(crate) fn limits(&self) -> &Limits {
        &self.0.limits
    }

    /// Per-user caps on files waiting for their bytes.
    pub(crate) fn pending_caps(&self) -> PendingCaps {
        self.0.pending_caps
    }

    /// The object store.
    pub fn store(&self) -> &dyn ObjectStore {
        &*self.0.store
    }

    /// The object store, shared (for a stream that outlives the call).
    pub(crate) fn store_arc(&self) -> Arc<dyn ObjectStore> {
        self.0.store.clone()
    }

    /// The file records.
    pub fn records(&self) -> &dyn RecordStore {
        &*self.0.records
    }

    /// The spent-token ledger.
    pub fn ledger(&self) -> &dyn Ledger {
        &*self.0.ledger
    }

    /// The configured actions.
    pub fn actions(&self) -> &Actions {
        &self.0.actions
    }

    /// Bearer token validation.
    pub fn access(&self) -> &AccessVerifier {
        &self.0.access
    }

    /// Bytes that were not `file`, sent under the link `jti`, refused
    /// (`file.rejected`): no record changes, so the ledger keeps the event
    /// where its records are the outbox (DynamoDB's stream, for a day, as
    /// long as the stream keeps a record), and it is [`Sluice::report`]ed.
    pub(crate) async fn reject(&self, file: &FileMeta, jti: &str) {
        use crate::events::{Event, EventType};
        let until = crate::time::now_unix() + 24 * 3600;
        // One file.rejected a link, on every replica (marked in the
        // ledger): whoever holds an upload link cannot make each bad PUT a
        // signed delivery to the team's endpoint. The link stays usable.
        if let Ok(crate::ledger::Spend::AlreadySpent) =
            self.ledger().spend(&format!("rejected#{jti}"), until).await
        {
            tracing::info!(file_id = %file.id, %jti, "bytes refused again on one link: no new event");
            return;
        }
        let event = Event::about(EventType::Rejected, file, Some(jti));
        if let Err(e) = self
            .ledger()
            .keep_event(&event.id, &event.body(), until)
            .await
        {
            tracing::warn!(file_id = %file.id, kind = event.kind.as_str(), error = %e, "event not recorded");
        }
        self.report(&event, file).await;
    }

    /// A change the record store does not make (a link spent, bytes
    /// refused): its audit line, and `event` about `file` appended to the
    /// outbox when webhooks are on; a failure is logged, and never fails
    /// the request that made the change.
    pub(crate) async fn report(&self, event: &crate::events::Event, file: &FileMeta) {
        crate::telemetry::audit(event.kind.into(), file, event.data.token_id.as_deref());
        if let Some(outbox) = self.records().outbox()
            && let Err(e) = outbox.append(event).await
        {
            tracing::warn!(file_id = %file.id, kind = event.kind.as_str(), error = %e, "event not recorded");
        }
    }

    /// The signing keys.
    pub(crate) fn keys(&self) -> &Keyring {
        &self.0.keys
    }

    /// The public base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.0.endpoints.public.as_str().trim_end_matches('/')
    }

    /// The base of the issuer's routes (`/uploads`, `/u/…`, `/browser/…`),
    /// without a trailing slash: each link follows the function that serves it.
    pub fn issuer_base(&self) -> &str {
        self.0.endpoints.issuer.as_str().trim_end_matches('/')
    }

    /// Where the issuer's routes are.
    pub fn issuer_url(&self) -> &Url {
        &self.0.endpoints.issuer
    }

    /// The base of the resolver's routes (`/l/…`, `/resolve`), without a trailing slash.
    pub fn resolver_base(&self) -> &str {
        self.0.endpoints.resolver.as_str().trim_end_matches('/')
    }

    /// The MCP endpoint's URL, e.g. `https://files.example.com/mcp`.
    pub fn mcp_url(&self) -> &str {
        self.0.endpoints.mcp.as_str()
    }

    /// The origins the in-chat upload widget runs on.
    pub fn widget_origins(&self) -> &[String] {
        &self.0.endpoints.widget_origins
    }

    /// Where the `mcp` function's routes are mounted: the MCP URL without
    /// its final `/mcp`.
    pub fn mcp_base_url(&self) -> &str {
        self.mcp_url()
            .strip_suffix("/mcp")
            .unwrap_or(self.mcp_url())
    }

    /// Where `file`'s object stands: the one decision of whether stored
    /// bytes match their pin, used by downloads, actions and every check of
    /// whether a file is uploaded.
    pub async fn stored(&self, file: &FileMeta) -> Result<Stored, Error> {
        let Some(info) = self.store().head(&file.object_key()).await? else {
            return Ok(Stored::Missing);
        };
        match (info.pin(file), self.store().access()) {
            (Pin::Matches, _) => Ok(Stored::Ready(info)),
            // A proxied store verified every byte on its way in.
            (Pin::Unverified, Access::Proxied) => Ok(Stored::Ready(info)),
            (Pin::Unverified, Access::Direct(presigner)) => {
                self.unvouched(file, info, presigner.checks_sha256()).await
            }
            (Pin::Differs, _) => {
                tracing::warn!(file_id = %file.id, "stored object does not match its pin");
                Ok(Stored::Mismatch)
            }
        }
    }

    /// An object a direct store does not vouch for: ready once sluice
    /// proved it (its record says so, for this very object). Until then,
    /// where the store checks SHA-256, a file in parts is being proven by
    /// its upload's completion; where it checks nothing, the object is
    /// proven here, once, a budget at a time.
    async fn unvouched(
        &self,
        file: &FileMeta,
        info: ObjectInfo,
        store_checks: bool,
    ) -> Result<Stored, Error> {
        let record = self.records().get(&file.owner, &file.id).await?;
        let kept = record.and_then(|r| r.proof);
        if proof::proves(kept.as_deref(), info.etag.as_deref()) {
            return Ok(Stored::Ready(info));
        }
        if store_checks {
            // Joined from parts: its completion proves it. In one PUT: the
            // store would have recorded the digest it checked (s3s-fs
            // keeps, without one, a body it refused).
            return Ok(match self.plan_of(file) {
                Some(_) => Stored::Verifying,
                None => {
                    tracing::warn!(file_id = %file.id, "stored object carries no checked digest");
                    Stored::Mismatch
                }
            });
        }
        let Some(etag) = info.etag.clone() else {
            tracing::warn!(file_id = %file.id, "the store gives no entity tag: the object cannot be proven");
            return Ok(Stored::Mismatch);
        };
        let mut held = match self.hold_proof(file, self.transfers().proof_budget).await {
            Ok(held) => held,
            Err(crate::store::StoreError::Busy(_)) => return Ok(Stored::Verifying),
            Err(e) => return Err(e.into()),
        };
        let budget = self.transfers().proof_budget;
        let proved = self
            .prove(&mut held, etag, proof::PROOF_SLICE, budget)
            .await;
        held.release(self).await;
        match proved {
            Ok(proof::Proved::Proven) => Ok(Stored::Ready(info)),
            Ok(proof::Proved::Partly(_)) | Err(crate::store::StoreError::Changed) => {
                Ok(Stored::Verifying)
            }
            Err(crate::store::StoreError::Mismatch(m)) => {
                tracing::warn!(file_id = %file.id, error = %m, "stored object is not the file declared: deleted");
                self.store().delete(&file.object_key()).await?;
                Ok(Stored::Mismatch)
            }
            Err(e) => Err(e.into()),
        }
    }
}
