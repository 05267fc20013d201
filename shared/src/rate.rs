//! Per-user rates: a token bucket per owner (GCRA, from `governor`), so one
//! user asking for uploads in a loop is refused with a time to come back
//! ([`Error::Limited`], 429 with `Retry-After` over HTTP) while everyone else
//! is served. The service takes from the bucket of each [`Kind`] as it
//! issues files and links, resolves handles, runs actions and starts pages
//! (`crate::service::limits::Limits::check_rate`).
//!
//! The buckets live in the process. Locally that is the whole server; on
//! Lambda each warm instance keeps its own, so a user spread over `n`
//! instances gets up to `n` times the rate: API Gateway's throttling bounds
//! the whole stage.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use governor::clock::{Clock as _, DefaultClock};
use governor::{Quota, RateLimiter};

use crate::error::Error;

pub use crate::config::{Kind, Rate, Rates};

/// The buckets of every [`Kind`].
#[derive(Debug)]
pub struct Limits {
    /// One a kind, in the order of [`Kind::ALL`].
    buckets: Vec<KeyedRate>,
    download_bytes_per_hour: u64,
}

impl Limits {
    /// Buckets for `rates`.
    pub fn new(rates: Rates) -> Self {
        Self {
            buckets: Kind::ALL
                .iter()
                .map(|&kind| KeyedRate::new(rates.of(kind), kind))
                .collect(),
            download_bytes_per_hour: rates.download_bytes_per_hour,
        }
    }

    /// The bytes of download links one user may be given in an hour: an
    /// allowance kept in the ledger, so that every replica shares it
    /// (`crate::service::limits::Limits::charge_download`).
    pub fn download_bytes_per_hour(&self) -> u64 {
        self.download_bytes_per_hour
    }

    /// Takes one from `key`'s bucket of `kind`, or says when to come back.
    pub fn check(&self, kind: Kind, key: &str) -> Result<(), Error> {
        self.check_n(kind, key, 1)
    }

    /// Takes `n` from `key`'s bucket of `kind` at once (a batch of `n`
    /// files), or says when to come back; `n` over the whole bucket is
    /// refused as more than may ever be taken at once.
    pub fn check_n(&self, kind: Kind, key: &str, n: u32) -> Result<(), Error> {
        self.buckets[kind as usize].check_n(key, n)
    }
}

type Keyed =
    RateLimiter<String, governor::state::keyed::DefaultKeyedStateStore<String>, DefaultClock>;

/// One bucket per owner (or page).
pub struct KeyedRate {
    limiter: Keyed,
    clock: DefaultClock,
    checks: AtomicU64,
    kind: Kind,
}

impl std::fmt::Debug for KeyedRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedRate")
            .field("owners", &self.limiter.len())
            .finish()
    }
}

/// Buckets of owners idle long enough to be full again are dropped this
/// often (in checks), so memory follows the active users only.
const RETAIN_EVERY: u64 = 4096;

/// `n`, at least 1.
fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n.max(1)).expect("at least 1")
}

impl KeyedRate {
    /// Buckets refilling at `rate.per_minute`, holding `rate.burst`.
    pub fn new(rate: Rate, kind: Kind) -> Self {
        let quota = Quota::per_minute(nz(rate.per_minute)).allow_burst(nz(rate.burst));
        Self {
            limiter: RateLimiter::keyed(quota),
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
            kind,
        }
    }

    /// Takes one from `owner`'s bucket, or says when to come back.
    pub fn check(&self, owner: &str) -> Result<(), Error> {
        self.check_n(owner, 1)
    }

    /// Takes `n` from `owner`'s bucket at once, or says when to come back.
    pub fn check_n(&self, owner: &str, n: u32) -> Result<(), Error> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % RETAIN_EVERY == RETAIN_EVERY - 1 {
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
        let key = crate::file::owner_hash(owner);
        let taken = match self.limiter.check_key_n(&key, nz(n)) {
            Ok(taken) => taken,
            Err(governor::InsufficientCapacity(most)) => {
                tracing::info!(owner = %key, n, most, kind = ?self.kind, "more than a whole bucket asked for");
                return Err(Error::Limited {
                    message: format!(
                        "{}: {n} at once is more than the {most} one user may ever ask for at once; ask for fewer",
                        self.kind.refused()
                    ),
                    retry_after: 60,
                });
            }
        };
        match taken {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                let retry_after = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                tracing::info!(owner = %key, retry_after, kind = ?self.kind, "rate limit reached");
                Err(Error::Limited {
                    message: format!("{}; try again in {retry_after} s", self.kind.refused()),
                    retry_after,
                })
            }
        }
    }

    /// Owners with a bucket now.
    pub fn owners(&self) -> usize {
        self.limiter.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(per_minute: u32, burst: u32) -> KeyedRate {
        KeyedRate::new(Rate { per_minute, burst }, Kind::Issue)
    }

    #[test]
    fn a_burst_is_allowed_then_refused_with_a_retry_time() {
        let l = limit(60, 3);
        for _ in 0..3 {
            assert!(l.check("alice").is_ok());
        }
        match l.check("alice") {
            Err(Error::Limited {
                retry_after,
                message,
            }) => {
                assert!((1..=2).contains(&retry_after), "{retry_after}");
                assert!(message.contains("nothing was issued"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// A batch takes one for each of its files: a thousand files in one
    /// call cost what a thousand calls do, and more than the whole bucket
    /// is refused outright.
    #[test]
    fn a_batch_takes_one_for_each_file() {
        let l = limit(60, 10);
        assert!(l.check_n("alice", 6).is_ok());
        assert!(
            l.check_n("alice", 6).is_err(),
            "six more do not fit in four"
        );
        assert!(l.check_n("alice", 4).is_ok());
        assert!(l.check("alice").is_err());
        match l.check_n("bob", 11) {
            Err(Error::Limited { message, .. }) => {
                assert!(
                    message.contains("11 at once is more than the 10"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(
            l.check_n("bob", 10).is_ok(),
            "nothing was taken by the refusal"
        );
    }

    #[test]
    fn each_owner_has_a_bucket_of_their_own() {
        let l = limit(60, 1);
        assert!(l.check("alice").is_ok());
        assert!(l.check("alice").is_err());
        assert!(l.check("bob").is_ok());
        assert_eq!(l.owners(), 2);
    }

    #[test]
    fn the_bucket_refills_at_the_rate() {
        // 6000 a minute: one every 10 ms.
        let l = limit(6000, 1);
        assert!(l.check("alice").is_ok());
        assert!(l.check("alice").is_err());
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert!(l.check("alice").is_ok());
    }
}
