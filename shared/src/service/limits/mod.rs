//! The per-user limits the service applies when it issues a file, in this
//! order: take one from the caller's issuing rate ([`crate::rate`]) → count
//! the caller's pending files and the bytes they declare, and record the new
//! file only if it fits under the caps, in one step of the record store →
//! at a cap, find files among the pending ones that have been uploaded
//! since (their records are brought up to date) and try once more → refuse
//! with which cap, and when the oldest pending file expires. The waits
//! of status calls are its part too ([`waits`]), and the shares of a bounded
//! number of slots among users in turn ([`turns`]: the scans').

pub mod turns;
mod waits;

use std::sync::Arc;

use super::files::Files;
use crate::error::Error;
use crate::file::FileMeta;
use crate::rate::Kind;
use crate::records::{Admission, FileRecord, Pending, PendingCaps, RecordError};
use crate::time::{now_unix, rfc3339};

pub use turns::{Turn, Turns};
pub use waits::{WAITS_PER_USER, Wait};

/// The per-user limits, called by name from every flow that issues
/// something: the rates, the caps on pending files, and the hourly
/// allowance of download bytes (kept in the ledger).
#[derive(Clone, Debug)]
pub struct Limits {
    records: Arc<dyn crate::records::RecordStore>,
    /// The hourly download allowances.
    ledger: Arc<dyn crate::ledger::Ledger>,
    files: Files,
    rates: Arc<crate::rate::Limits>,
    pending_caps: PendingCaps,
    waits: waits::Waits,
    status_wait: std::time::Duration,
}

impl Limits {
    /// The `rates` and `pending_caps` read from the `limits` group, over
    /// `files` (whose pending records are settled at a cap).
    pub fn new(
        backends: &super::backends::Backends,
        files: Files,
        rates: crate::rate::Limits,
        pending_caps: PendingCaps,
    ) -> Self {
        let status_wait = backends.transfers.status_wait;
        Self {
            records: backends.records.clone(),
            ledger: backends.ledger.clone(),
            files,
            rates: Arc::new(rates),
            pending_caps,
            waits: waits::Waits::default(),
            status_wait,
        }
    }

    /// Per-user caps on files waiting for their bytes.
    pub(crate) fn pending_caps(&self) -> PendingCaps {
        self.pending_caps
    }
}

/// Whether a file issued counts against its owner's issuing rate and
/// pending caps: what a user asks for does; a file an action's upstream
/// returns does not (the action has run, and its result must not be lost
/// to the caller's limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    /// Asked for by the user.
    Yes,
    /// Made by an action's upstream.
    No,
    /// Under the owner's pending caps, its rate taken already (an import
    /// whose size and digest are known once its bytes are in).
    CapsOnly,
}

impl Limits {
    /// Takes one from `key`'s bucket of `kind` (an owner's, or a page's).
    pub(crate) fn check_rate(&self, kind: Kind, key: &str) -> Result<(), Error> {
        self.rates.check(kind, key)
    }

    /// [`Limits::check_rate`] for `n` at once (a batch of `n` files).
    pub(crate) fn check_rate_n(&self, kind: Kind, key: &str, n: usize) -> Result<(), Error> {
        self.rates
            .check_n(kind, key, u32::try_from(n.max(1)).unwrap_or(u32::MAX))
    }

    /// Admits a file issued, as `counted` says, in admission's order: one
    /// the user asked for takes one from their issuing rate, then is
    /// recorded under the caps ([`Limits::admit_within`]); an import's (its
    /// rate taken already) under the caps alone; one an action's upstream
    /// returned is recorded outside both. Recorded pending until its bytes
    /// are stored.
    pub(crate) async fn admit(
        &self,
        file: &FileMeta,
        expires_at: i64,
        counted: Counted,
    ) -> Result<(), Error> {
        match counted {
            Counted::Yes => {
                self.check_rate(Kind::Issue, &file.owner)?;
                self.admit_within(file, expires_at).await
            }
            Counted::CapsOnly => self.admit_within(file, expires_at).await,
            Counted::No => {
                let record = FileRecord::issued(file, expires_at);
                self.records.put(&record).await?;
                Ok(())
            }
        }
    }

    /// Records a newly issued file, pending until its bytes arrive, unless
    /// its owner already has as many pending files, or pending bytes, as
    /// the caps allow (nothing recorded). Files uploaded straight to the
    /// store are found ready before a refusal.
    async fn admit_within(&self, file: &FileMeta, expires_at: i64) -> Result<(), Error> {
        let record = FileRecord::issued(file, expires_at);
        let (records, caps, now) = (&*self.records, self.pending_caps, now_unix());
        let put = || records.put_within(&record, caps, now);
        let Some((totals, pending)) = self.within_caps(&file.owner, now, put).await? else {
            return Ok(());
        };
        let within_pending = PendingCaps {
            stored: None,
            ..caps
        };
        if within_pending.admit(totals, file.size) {
            return Err(over_stored(caps, totals, file.size));
        }
        Err(over_caps(caps, &pending, file.size, now))
    }

    /// Records every file of `admission` (a batch of `owner`'s) under
    /// their caps at once ([`crate::records::Usage::put_all_within`]), or
    /// nothing: `None` when recorded, else the owner's totals that left no
    /// room.
    pub(crate) async fn admit_all(
        &self,
        owner: &str,
        admission: &Admission<'_>,
        now: i64,
    ) -> Result<Option<Pending>, Error> {
        let (records, caps) = (&*self.records, self.pending_caps);
        let put = || records.put_all_within(admission, caps, now);
        Ok(self
            .within_caps(owner, now, put)
            .await?
            .map(|(totals, _)| totals))
    }

    /// The one step of admission under the caps, `put` (a count and a
    /// write in one step of the record store): cheap first; at a cap, the
    /// owner's files still marked pending are settled (files uploaded
    /// straight to the store are found ready) and `put` is tried once
    /// more. `None`: recorded; else the totals that left no room, and the
    /// pending files as settled.
    async fn within_caps<F, Fut>(
        &self,
        owner: &str,
        now: i64,
        put: F,
    ) -> Result<Option<(Pending, Vec<FileRecord>)>, Error>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Option<Pending>, RecordError>>,
    {
        if put().await?.is_none() {
            return Ok(None);
        }
        let pending = self
            .records
            .pending(owner, now, self.pending_caps.files)
            .await?;
        let pending: Vec<_> = self
            .files
            .refresh(pending)
            .await?
            .into_iter()
            .map(|(record, _)| record)
            .collect();
        Ok(put().await?.map(|totals| (totals, pending)))
    }

    /// The bytes `owner` may still add under their caps (their pending
    /// bytes, and all their bytes where that is capped; none at the cap on
    /// pending files): how far a file whose size is not known yet (an
    /// import not declared) may grow before it is refused. Checked before
    /// its first byte and as it grows; its issue checks the caps again.
    pub(crate) async fn room(&self, owner: &str) -> Result<u64, Error> {
        let (records, caps, now) = (&*self.records, self.pending_caps, now_unix());
        let pending = records.pending_totals(owner, now, caps.files).await?;
        if pending.files >= caps.files {
            return Ok(0);
        }
        let mut room = caps.bytes.saturating_sub(pending.bytes);
        if let Some(stored) = caps.stored {
            let all = records.stored_bytes(owner, now).await?;
            room = room.min(stored.saturating_sub(all));
        }
        Ok(room)
    }

    /// Takes `file`'s size from its owner's allowance of download bytes for
    /// this clock hour (`SLUICE_DOWNLOAD_BYTES_PER_HOUR`), kept in the
    /// ledger so that every replica shares it. It bounds the bytes of the
    /// links one user is given; each link is redeemed once, and on S3 its
    /// redirect is a presigned GET that lives seconds
    /// (`SLUICE_DOWNLOAD_URL_TTL_SECS`), so a link's bytes can be fetched
    /// again only by whoever holds that URL within those seconds.
    pub(crate) async fn charge_download(&self, file: &FileMeta) -> Result<(), Error> {
        let limit = self.rates.download_bytes_per_hour();
        let now = now_unix();
        let hour = now.div_euclid(3600);
        let owner = crate::file::owner_hash(&file.owner);
        let key = format!("dl#{owner}#{hour}");
        // Kept an hour past its own, for clocks a little apart.
        let kept_until = (hour + 2) * 3600;
        if self
            .ledger
            .charge(&key, file.size, limit, kept_until)
            .await?
        {
            return Ok(());
        }
        let refused =
            "you were given download links for too many bytes in this hour: none was issued";
        if file.size > limit {
            return Err(Error::Limited {
                message: format!(
                    "{refused}: this file is larger than the whole allowance ({limit} bytes an hour)"
                ),
                retry_after: 3600,
            });
        }
        let retry_after = u64::try_from((hour + 1) * 3600 - now).unwrap_or(1).max(1);
        tracing::info!(%owner, retry_after, "download allowance reached");
        Err(Error::Limited {
            message: format!("{refused}; try again in {retry_after} s"),
            retry_after,
        })
    }
}

/// How long a user at the cap on all their bytes is asked to wait: files
/// are freed as they expire, and which expires next is not read here.
const STORED_RETRY_SECS: u64 = 600;

/// The refusal of a file of `size` bytes beside `totals` (an owner's files)
/// under the cap on all their bytes.
fn over_stored(caps: PendingCaps, totals: Pending, size: u64) -> Error {
    Error::Limited {
        message: format!(
            "your files already take {} bytes and this one {size} more (the limit is {} per \
             user): nothing was issued; room is freed as your oldest files expire",
            totals.stored,
            caps.stored.unwrap_or(u64::MAX),
        ),
        retry_after: STORED_RETRY_SECS,
    }
}

/// The refusal of a file of `size` bytes beside `records` (an owner's
/// pending files, some perhaps found ready), which leave no room under
/// `caps`: which limit, and when the oldest pending file expires.
fn over_caps(caps: PendingCaps, records: &[FileRecord], size: u64, now: i64) -> Error {
    let pending: Vec<&FileRecord> = records.iter().filter(|r| !r.ready).collect();
    let files = pending.len() as u64;
    let bytes = pending
        .iter()
        .map(|r| r.file.size)
        .fold(0u64, u64::saturating_add);
    let next_expiry = pending
        .iter()
        .map(|r| r.expires_at)
        .min()
        .unwrap_or(now + 60);
    let retry_after = u64::try_from(next_expiry - now).unwrap_or(1).max(1);
    Error::Limited {
        message: if files >= caps.files {
            format!(
                "you have {files} files waiting for their upload (the limit is {}): nothing \
                 was issued; upload them, or wait until the oldest expires at {}",
                caps.files,
                rfc3339(next_expiry)
            )
        } else {
            format!(
                "your pending files already declare {bytes} bytes and this one {size} more \
                 (the limit is {}): nothing was issued; upload them, or wait until the oldest \
                 expires at {}",
                caps.bytes,
                rfc3339(next_expiry)
            )
        },
        retry_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::FileId;
    use crate::sha::Sha256;

    fn pending(size: u64, expires_at: i64) -> FileRecord {
        FileRecord {
            file: FileMeta {
                id: FileId::random(),
                owner: "alice".into(),
                filename: "a".into(),
                content_type: "text/plain".into(),
                size,
                sha256: Sha256::of(b""),
            },
            created_ms: 0,
            expires_at,
            ready: false,
            proof: None,
            scan: None,
            trace: None,
            copy: false,
        }
    }

    #[test]
    fn a_refusal_names_the_cap_reached_and_when_to_come_back() {
        let caps = PendingCaps {
            files: 2,
            bytes: 100,
            stored: Some(1000),
        };
        let full = [pending(1, 1_030), pending(1, 1_010)];
        let Error::Limited {
            message,
            retry_after,
        } = over_caps(caps, &full, 1, 1_000)
        else {
            panic!()
        };
        assert!(message.contains("2 files waiting"), "{message}");
        assert_eq!(retry_after, 10);
        let heavy = [pending(90, 1_500)];
        let Error::Limited { message, .. } = over_caps(caps, &heavy, 20, 1_000) else {
            panic!()
        };
        assert!(
            message.contains("declare 90 bytes and this one 20 more"),
            "{message}"
        );
    }
}
