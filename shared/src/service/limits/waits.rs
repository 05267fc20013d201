//! The waits part: every call that waits for something to end
//! (`get_upload_status` on a person's upload, `get_import_status` and
//! `GET /imports/{id}` on an import) asks here first. A waiting call holds
//! its connection (locally, out of `SLUICE_MAX_CONNECTIONS`) or its
//! instance (on Lambda) for up to its budget, so waits are few: at most
//! [`WAITS_PER_USER`] of one user's at once, one per id waited on, each
//! taken from a per-user rate, and none longer than the status wait. A
//! call that may not wait is not refused: it answers at once with where
//! the thing stands, as a call without `wait_seconds` does, and the model
//! asks again later.
//!
//! The count lives in the process, like the rates: on Lambda each instance
//! holds one wait (it serves one request at a time), and the rate bounds
//! how many a user starts.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::Limits;

use crate::rate::Kind;

/// The most waits one user holds at once (more hold no more information:
/// one person uploads through one page at a time).
pub const WAITS_PER_USER: usize = 2;

/// The waits under way: per owner, and the upload ids waited on.
#[derive(Debug, Default, Clone)]
pub struct Waits(Arc<Mutex<Held>>);

#[derive(Debug, Default)]
struct Held {
    owners: HashMap<String, usize>,
    /// The ids waited on (an upload id, an import's file id).
    ids: HashSet<String>,
}

/// One wait under way, given back when dropped.
#[derive(Debug)]
struct Waiting {
    waits: Waits,
    owner: String,
    upload: String,
}

impl Waits {
    /// A wait of `owner`'s on `upload`, if one more may be held.
    fn begin(&self, owner: &str, upload: &str) -> Option<Waiting> {
        let mut held = self.lock();
        let count = held.owners.get(owner).copied().unwrap_or(0);
        if count >= WAITS_PER_USER || held.ids.contains(upload) {
            return None;
        }
        held.owners.insert(owner.to_owned(), count + 1);
        held.ids.insert(upload.to_owned());
        Some(Waiting {
            waits: self.clone(),
            owner: owner.to_owned(),
            upload: upload.to_owned(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut held = self.waits.lock();
        held.ids.remove(&self.upload);
        if let Some(count) = held.owners.get_mut(&self.owner) {
            *count -= 1;
            if *count == 0 {
                held.owners.remove(&self.owner);
            }
        }
    }
}

/// What a call may wait: [`Wait::time`], held until the wait is dropped.
#[derive(Debug)]
pub struct Wait {
    time: Duration,
    _held: Option<Waiting>,
}

impl Wait {
    /// How long the call may wait (zero: it answers at once).
    pub fn time(&self) -> Duration {
        self.time
    }
}

impl Limits {
    /// How long `owner` may wait on `id` (an upload id, an import's file
    /// id), asking for `asked`: at most the status wait, and only within
    /// their rate of waits, fewer than [`WAITS_PER_USER`] under way and
    /// none other on this id; otherwise zero (answer at once). Keep the
    /// [`Wait`] for as long as the call waits.
    pub fn wait(&self, owner: &str, id: &str, asked: Duration) -> Wait {
        let asked = asked.min(self.status_wait);
        let at_once = Wait {
            time: Duration::ZERO,
            _held: None,
        };
        if asked.is_zero() {
            return at_once;
        }
        if let Err(e) = self.check_rate(Kind::Waits, owner) {
            tracing::info!(error = %e, "a status call answers at once: waits over the rate");
            return at_once;
        }
        match self.waits.begin(owner, id) {
            Some(held) => Wait {
                time: asked,
                _held: Some(held),
            },
            None => {
                tracing::info!("a status call answers at once: its user holds the waits allowed");
                at_once
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_holds_a_few_waits_and_an_upload_one() {
        let waits = Waits::default();
        let one = waits.begin("alice", "u1").expect("a first wait");
        assert!(waits.begin("alice", "u1").is_none(), "one per upload id");
        let two = waits.begin("alice", "u2").expect("a second wait");
        assert!(waits.begin("alice", "u3").is_none(), "at most two a user");
        assert!(waits.begin("bob", "u4").is_some(), "another user waits");
        drop(one);
        assert!(waits.begin("alice", "u3").is_some(), "given back when done");
        drop(two);
        assert!(waits.lock().owners.is_empty(), "nothing kept");
    }
}
