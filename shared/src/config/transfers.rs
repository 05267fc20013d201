//! The transfer settings, one group: what the service holds as it is.

use std::time::Duration;

/// How files move: the lifetimes, sizes and time limits of uploads and
/// downloads. Read here once; the service holds the group as it is
/// ([`crate::Sluice::transfers`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfers {
    /// How long a presigned S3 download URL is valid
    /// (`SLUICE_DOWNLOAD_URL_TTL_SECS`, default 10, at most 60).
    pub download_url_ttl: Duration,
    /// How long a handle is redeemable (`SLUICE_HANDLE_TTL_SECS`, default 45 min).
    pub handle_ttl: Duration,
    /// How long a download link is valid (`SLUICE_LINK_TTL_SECS`, default 5 min).
    pub link_ttl: Duration,
    /// How long an upload link is valid (`SLUICE_UPLOAD_TTL_SECS`, default 15 min).
    pub upload_ttl: Duration,
    /// The largest file accepted (`SLUICE_MAX_UPLOAD_BYTES`; default the
    /// local quota, or S3's largest object, 10,000 parts of 5 GiB).
    pub max_upload_bytes: u64,
    /// The size of each part of an upload in parts (`SLUICE_PART_BYTES`,
    /// 64 MiB; whole MiB, 5 MiB to 5 GiB).
    pub part_bytes: u64,
    /// Files larger than this go in parts (`SLUICE_SINGLE_PUT_MAX_BYTES`,
    /// 64 MiB).
    pub single_put_max_bytes: u64,
    /// How long one completion of an upload in parts reads to prove it
    /// before answering that it goes on (`SLUICE_PROOF_MILLIS`, 20 s).
    pub proof_budget: Duration,
    /// How long an upload's body may go without a byte
    /// (`SLUICE_BODY_IDLE_TIMEOUT_SECS`, default 30).
    pub body_idle_timeout: Duration,
    /// The longest `get_upload_status` waits for a person's upload
    /// ([`STATUS_WAIT`], or [`STATUS_WAIT_ON_LAMBDA`]).
    pub status_wait: Duration,
}

/// The longest a status call waits: within every host's cut-off of a tool
/// call (claude.ai's is about 60 s, Claude Desktop's 4 min).
pub const STATUS_WAIT: Duration = Duration::from_secs(45);

/// The same on Lambda, where API Gateway ends a request at 30 s.
pub const STATUS_WAIT_ON_LAMBDA: Duration = Duration::from_secs(25);
