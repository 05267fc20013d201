//! What one user may ask for, one group: the per-user rates and the caps
//! on files waiting for their bytes and on all a user's bytes.

use super::ConfigError;
use super::read::Vars;

/// The per-user limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserLimits {
    /// Per-user rates (`SLUICE_ISSUE_*`, `SLUICE_LINK_*`,
    /// `SLUICE_RESOLVE_*`, `SLUICE_ACTION_RATE_*`/`SLUICE_ACTION_BURST`)
    /// and the per-page rate of browser page starts
    /// (`SLUICE_PAGE_START_*`): more are answered 429 with `Retry-After`.
    /// Counted per process: on Lambda, per warm instance.
    pub rates: crate::rate::Rates,
    /// Files one user may have waiting for their bytes
    /// (`SLUICE_MAX_PENDING_FILES`, default 1000, one batch) and the bytes they may
    /// declare in all (`SLUICE_MAX_PENDING_BYTES`, default 50 GiB); more are
    /// answered 429 until some are uploaded or expire. And the bytes all of
    /// one user's files may declare (`SLUICE_MAX_STORED_BYTES_PER_USER`,
    /// default half the local quota; none on S3).
    pub pending_caps: crate::records::PendingCaps,
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
fn pending_caps(vars: &Vars, local: bool) -> Result<crate::records::PendingCaps, ConfigError> {
    let stored = match vars.optional_positive("SLUICE_MAX_STORED_BYTES_PER_USER")? {
        Some(cap) => Some(cap),
        None if local => Some(vars.positive("SLUICE_QUOTA_BYTES")? / 2),
        None => None,
    };
    Ok(crate::records::PendingCaps {
        files: vars.positive("SLUICE_MAX_PENDING_FILES")?,
        bytes: vars.positive("SLUICE_MAX_PENDING_BYTES")?,
        stored,
    })
}

/// The per-user rates, and the per-page rate of page starts.
fn rates(vars: &Vars) -> Result<crate::rate::Rates, ConfigError> {
    let rate = |per_minute, burst| {
        Ok::<_, ConfigError>(crate::rate::Rate {
            per_minute: vars.count32(per_minute)?,
            burst: vars.count32(burst)?,
        })
    };
    Ok(crate::rate::Rates {
        issue: rate("SLUICE_ISSUE_RATE_PER_MINUTE", "SLUICE_ISSUE_BURST")?,
        links: rate("SLUICE_LINK_RATE_PER_MINUTE", "SLUICE_LINK_BURST")?,
        resolve: rate("SLUICE_RESOLVE_RATE_PER_MINUTE", "SLUICE_RESOLVE_BURST")?,
        actions: rate("SLUICE_ACTION_RATE_PER_MINUTE", "SLUICE_ACTION_BURST")?,
        page_starts: rate(
            "SLUICE_PAGE_START_RATE_PER_MINUTE",
            "SLUICE_PAGE_START_BURST",
        )?,
        download_bytes_per_hour: vars.positive("SLUICE_DOWNLOAD_BYTES_PER_HOUR")?,
    })
}
