//! The per-user caps on what a user's files may hold: a leaf both sides
//! name without naming each other. The settings read them
//! ([`crate::config::UserLimits`]); the records hold a count against them
//! ([`crate::records::Usage`]), in the same step that writes a record.

/// Per-user limits on files waiting for their bytes, and on the bytes a
/// user's files may take in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingCaps {
    /// Pending files one user may have (`SLUICE_MAX_PENDING_FILES`).
    pub files: u64,
    /// Bytes those files may declare in all (`SLUICE_MAX_PENDING_BYTES`).
    pub bytes: u64,
    /// Bytes all of one user's files, pending or ready, may declare
    /// (`SLUICE_MAX_STORED_BYTES_PER_USER`); `None`: no such cap.
    pub stored: Option<u64>,
}
