//! What one user may ask for, one group: the per-user rates (each
//! [`Kind`], what it refuses, its rate: read here, or fixed) and the caps
//! on files waiting for their bytes and on all a user's bytes. A new
//! per-user rate is this file and the component that takes from it
//! (`Limits::check_rate`); the buckets (`crate::rate`) follow the kinds.

use super::ConfigError;
use super::read::Vars;
use super::settings::Default::{Unset, Value};
use super::settings::Group;
use super::settings::{Parse, Setting, s};

/// The per-user limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserLimits {
    /// Per-user rates (`SLUICE_ISSUE_*`, `SLUICE_LINK_*`,
    /// `SLUICE_RESOLVE_*`, `SLUICE_ACTION_RATE_*`/`SLUICE_ACTION_BURST`)
    /// and the per-page rate of browser page starts
    /// (`SLUICE_PAGE_START_*`): more are answered 429 with `Retry-After`.
    /// Counted per process: on Lambda, per warm instance.
    pub rates: Rates,
    /// Files one user may have waiting for their bytes
    /// (`SLUICE_MAX_PENDING_FILES`, default 1000, one batch) and the bytes they may
    /// declare in all (`SLUICE_MAX_PENDING_BYTES`, default 50 GiB); more are
    /// answered 429 until some are uploaded or expire. And the bytes all of
    /// one user's files may declare (`SLUICE_MAX_STORED_BYTES_PER_USER`,
    /// default half the local quota; none on S3).
    pub pending_caps: crate::caps::PendingCaps,
}

impl UserLimits {
    /// The limits; `in_dir`: the bytes are in the data directory.
    pub(super) fn read(vars: &Vars, in_dir: bool) -> Result<Self, ConfigError> {
        Ok(Self {
            rates: rates(vars)?,
            pending_caps: pending_caps(vars, in_dir)?,
        })
    }
}

/// The caps on one user's pending files and on all their bytes: half the
/// local quota by default, so one user cannot fill the disk for everyone;
/// none by default on S3.
fn pending_caps(vars: &Vars, local: bool) -> Result<crate::caps::PendingCaps, ConfigError> {
    let stored = match vars.optional_positive("SLUICE_MAX_STORED_BYTES_PER_USER")? {
        Some(cap) => Some(cap),
        None if local => Some(vars.positive("SLUICE_QUOTA_BYTES")? / 2),
        None => None,
    };
    Ok(crate::caps::PendingCaps {
        files: vars.positive("SLUICE_MAX_PENDING_FILES")?,
        bytes: vars.positive("SLUICE_MAX_PENDING_BYTES")?,
        stored,
    })
}

/// The per-user rates, and the per-page rate of page starts.
fn rates(vars: &Vars) -> Result<Rates, ConfigError> {
    let rate = |per_minute, burst| {
        Ok::<_, ConfigError>(Rate {
            per_minute: vars.count32(per_minute)?,
            burst: vars.count32(burst)?,
        })
    };
    // In the order of [`Kind::ALL`]: a new kind is a row here, its
    // variables below, and the component that takes from it.
    Ok(Rates {
        per_kind: [
            rate("SLUICE_ISSUE_RATE_PER_MINUTE", "SLUICE_ISSUE_BURST")?,
            rate("SLUICE_LINK_RATE_PER_MINUTE", "SLUICE_LINK_BURST")?,
            rate("SLUICE_RESOLVE_RATE_PER_MINUTE", "SLUICE_RESOLVE_BURST")?,
            rate("SLUICE_ACTION_RATE_PER_MINUTE", "SLUICE_ACTION_BURST")?,
            rate(
                "SLUICE_PAGE_START_RATE_PER_MINUTE",
                "SLUICE_PAGE_START_BURST",
            )?,
            COMPLETIONS,
            WAITS,
            APPENDS,
        ],
        download_bytes_per_hour: vars.positive("SLUICE_DOWNLOAD_BYTES_PER_HOUR")?,
    })
}

/// A configured rate: sustained per minute, and the burst allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests per minute, sustained.
    pub per_minute: u32,
    /// Requests at once after a quiet spell.
    pub burst: u32,
}

/// Which per-user rate: each has its own buckets, and says what it refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Files issued (uploads requested, small files stored).
    Issue,
    /// Download links issued.
    Links,
    /// Handles resolved (`POST /resolve`).
    Resolve,
    /// Actions run.
    Actions,
    /// Starts of one browser page (keyed by the page, not its owner).
    PageStarts,
    /// Completions of one upload in parts (keyed by the file): each may
    /// read the whole joined file, so a link holder cannot make sluice
    /// read it over and over.
    Completions,
    /// Waiting `get_upload_status` calls (each holds a connection or an
    /// instance while it waits): one over the rate answers at once.
    Waits,
    /// Appends (`PATCH`) to one resumable upload (keyed by the file): each
    /// that writes syncs the disk, so a link holder cannot make sluice
    /// sync it over and over.
    Appends,
}

/// Appends to one resumable upload: a tus client sends one request a chunk
/// (the page's chunks are the part size, 64 MiB by default) and a few more
/// to resume; far more is someone else.
const APPENDS: Rate = Rate {
    per_minute: 600,
    burst: 120,
};

/// Completions of one upload in parts: a line asks again as soon as a
/// proof that goes on answers (each ask taking up to the proof's budget),
/// and a person may rerun it a few times; far more is someone else.
const COMPLETIONS: Rate = Rate {
    per_minute: 12,
    burst: 30,
};

/// Waiting status calls of one user: a model told to wait calls again
/// once per answer from the person; far more is a loop.
const WAITS: Rate = Rate {
    per_minute: 20,
    burst: 10,
};

impl Kind {
    /// Every kind, in the order of [`Rates::per_kind`].
    pub const ALL: [Kind; 8] = [
        Kind::Issue,
        Kind::Links,
        Kind::Resolve,
        Kind::Actions,
        Kind::PageStarts,
        Kind::Completions,
        Kind::Waits,
        Kind::Appends,
    ];

    /// What a refusal of this kind says.
    pub fn refused(self) -> &'static str {
        match self {
            Kind::Issue => "too many files requested in a short time: nothing was issued",
            Kind::Links => "too many download links requested in a short time: none was issued",
            Kind::Resolve => "too many handles resolved in a short time: nothing was resolved",
            Kind::Actions => "too many actions run in a short time: this one did not run",
            Kind::PageStarts => {
                "This link was used too many times in a short time. Wait a minute, then try again."
            }
            Kind::Completions => {
                "this upload was asked to complete too many times in a short time: nothing was done"
            }
            Kind::Waits => "too many waiting status calls in a short time: this one did not wait",
            Kind::Appends => {
                "too many requests to this upload in a short time: nothing was written"
            }
        }
    }
}

/// The rates, one per [`Kind`] (the fixed ones beside those read from
/// the environment), and the hourly download allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rates {
    /// Each kind's, in the order of [`Kind::ALL`].
    pub per_kind: [Rate; Kind::ALL.len()],
    /// Bytes of download links per user per hour (and at once).
    pub download_bytes_per_hour: u64,
}

impl Rates {
    /// The rate of `kind`.
    pub fn of(&self, kind: Kind) -> Rate {
        self.per_kind[kind as usize]
    }
}

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_ISSUE_RATE_PER_MINUTE",
        Group::Limits,
        Parse::Positive,
        Value("120"),
        "files one user may have issued per minute; more get 429 with `Retry-After` (per process: on Lambda, per warm instance)",
    ),
    s(
        "SLUICE_ISSUE_BURST",
        Group::Limits,
        Parse::Positive,
        Value("1000"),
        "files one user may have issued at once after a quiet spell (a batch of `request_uploads` takes one for each of its files, so as many as one batch holds)",
    ),
    s(
        "SLUICE_LINK_RATE_PER_MINUTE",
        Group::Limits,
        Parse::Positive,
        Value("300"),
        "download links one user may have issued per minute (get_download_url, an action's links); more get 429 with `Retry-After`",
    ),
    s(
        "SLUICE_LINK_BURST",
        Group::Limits,
        Parse::Positive,
        Value("100"),
        "download links one user may have issued at once after a quiet spell",
    ),
    s(
        "SLUICE_RESOLVE_RATE_PER_MINUTE",
        Group::Limits,
        Parse::Positive,
        Value("300"),
        "handles one caller may resolve per minute (`POST /resolve`)",
    ),
    s(
        "SLUICE_RESOLVE_BURST",
        Group::Limits,
        Parse::Positive,
        Value("100"),
        "handles one caller may resolve at once after a quiet spell",
    ),
    s(
        "SLUICE_ACTION_RATE_PER_MINUTE",
        Group::Limits,
        Parse::Positive,
        Value("60"),
        "actions one user may run per minute",
    ),
    s(
        "SLUICE_ACTION_BURST",
        Group::Limits,
        Parse::Positive,
        Value("30"),
        "actions one user may run at once after a quiet spell",
    ),
    s(
        "SLUICE_PAGE_START_RATE_PER_MINUTE",
        Group::Limits,
        Parse::Positive,
        Value("10"),
        "starts of one browser page per minute (whoever holds its URL); its owner's other limits are untouched",
    ),
    s(
        "SLUICE_PAGE_START_BURST",
        Group::Limits,
        Parse::Positive,
        Value("5"),
        "starts of one browser page at once after a quiet spell",
    ),
    s(
        "SLUICE_MAX_PENDING_FILES",
        Group::Limits,
        Parse::Positive,
        Value("1000"),
        "files one user may have waiting for their bytes (as many as one request_uploads takes); more get 429 until some are uploaded or expire",
    ),
    s(
        "SLUICE_MAX_PENDING_BYTES",
        Group::Limits,
        Parse::Positive,
        Value("53687091200"),
        "bytes one user's waiting files may declare (50 GiB)",
    ),
    s(
        "SLUICE_MAX_STORED_BYTES_PER_USER",
        Group::Limits,
        Parse::Positive,
        Unset(
            "half of SLUICE_QUOTA_BYTES with the local store; none with S3, which has no disk to share",
        ),
        "bytes all of one user's files may declare, pending or uploaded, until they expire; more get 429",
    ),
    s(
        "SLUICE_DOWNLOAD_BYTES_PER_HOUR",
        Group::Limits,
        Parse::Positive,
        Value("107374182400"),
        "bytes of download links one user may be given in a clock hour, each counted at its file's size, shared by every replica (kept in the ledger) (100 GiB)",
    ),
];
