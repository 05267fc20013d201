//! The transfer settings, one group: what the service holds as it is.

use std::time::Duration;

use super::ConfigError;
use super::read::{Vars, invalid};
use super::refuse;
use super::settings::Default::{Unset, Value};
use super::settings::Group;
use super::settings::{Parse, Setting, s};

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
    /// Files up to this size are saved by the download view in the chat as
    /// embedded content, larger ones through a person's link
    /// (`SLUICE_VIEW_EMBED_MAX_BYTES`, 8 MiB).
    pub view_embed_max: u64,
    /// The longest `get_upload_status` waits for a person's upload
    /// ([`STATUS_WAIT`], or [`STATUS_WAIT_ON_LAMBDA`]).
    pub status_wait: Duration,
}

/// The longest a status call waits: within every host's cut-off of a tool
/// call (claude.ai's is about 60 s, Claude Desktop's 4 min).
pub const STATUS_WAIT: Duration = Duration::from_secs(45);

/// The same on Lambda, where API Gateway ends a request at 30 s.
pub const STATUS_WAIT_ON_LAMBDA: Duration = Duration::from_secs(25);

impl Transfers {
    /// The group; `in_dir`: the bytes are in the data directory (the
    /// largest file is then the quota, not S3's largest object).
    pub(super) fn read(vars: &Vars, in_dir: bool) -> Result<Self, ConfigError> {
        Ok(Self {
            download_url_ttl: vars.secs("SLUICE_DOWNLOAD_URL_TTL_SECS")?,
            handle_ttl: vars.secs("SLUICE_HANDLE_TTL_SECS")?,
            link_ttl: vars.secs("SLUICE_LINK_TTL_SECS")?,
            upload_ttl: vars.secs("SLUICE_UPLOAD_TTL_SECS")?,
            max_upload_bytes: match vars.optional_positive("SLUICE_MAX_UPLOAD_BYTES")? {
                Some(max) => max,
                None if in_dir => vars.positive("SLUICE_QUOTA_BYTES")?,
                None => crate::multipart::MAX_PARTS * crate::multipart::MAX_PART_BYTES,
            },
            part_bytes: part_bytes(vars)?,
            single_put_max_bytes: single_put_max_bytes(vars)?,
            proof_budget: Duration::from_millis(vars.positive("SLUICE_PROOF_MILLIS")?),
            body_idle_timeout: vars.secs("SLUICE_BODY_IDLE_TIMEOUT_SECS")?,
            view_embed_max: vars.positive("SLUICE_VIEW_EMBED_MAX_BYTES")?,
            status_wait: if vars.in_lambda() {
                STATUS_WAIT_ON_LAMBDA
            } else {
                STATUS_WAIT
            },
        })
    }
}

/// `SLUICE_SINGLE_PUT_MAX_BYTES`, at most what S3 takes in one PUT.
fn single_put_max_bytes(vars: &Vars) -> Result<u64, ConfigError> {
    use crate::multipart::MAX_PART_BYTES;
    let bytes = vars.positive("SLUICE_SINGLE_PUT_MAX_BYTES")?;
    if bytes > MAX_PART_BYTES {
        return Err(invalid(
            "SLUICE_SINGLE_PUT_MAX_BYTES",
            format!("must be at most {MAX_PART_BYTES} (5 GiB), S3's limit for one PUT"),
        ));
    }
    Ok(bytes)
}

/// `SLUICE_PART_BYTES`, within what S3 takes for a part.
fn part_bytes(vars: &Vars) -> Result<u64, ConfigError> {
    use crate::multipart::{MAX_PART_BYTES, MIN_PART_BYTES};
    let bytes = vars.positive("SLUICE_PART_BYTES")?;
    if !(MIN_PART_BYTES..=MAX_PART_BYTES).contains(&bytes) {
        return Err(invalid(
            "SLUICE_PART_BYTES",
            format!(
                "must be from {MIN_PART_BYTES} (5 MiB) to {MAX_PART_BYTES} (5 GiB) bytes, S3's bounds for a part"
            ),
        ));
    }
    Ok(bytes)
}

/// Lifetimes that bound one another.
pub(super) fn rules(vars: &Vars) -> Result<(), ConfigError> {
    if vars.secs("SLUICE_DOWNLOAD_URL_TTL_SECS")? > Duration::from_secs(60) {
        return refuse("SLUICE_DOWNLOAD_URL_TTL_SECS", "must be at most 60");
    }
    if vars.secs("SLUICE_UPLOAD_TTL_SECS")? > vars.secs("SLUICE_HANDLE_TTL_SECS")? {
        return refuse(
            "SLUICE_UPLOAD_TTL_SECS",
            "must be at most SLUICE_HANDLE_TTL_SECS: an upload finishing after its handle expired would store a file nobody can use",
        );
    }
    Ok(())
}

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_HANDLE_TTL_SECS",
        Group::Limits,
        Parse::Seconds,
        Value("2700"),
        "handle lifetime (45 min)",
    ),
    s(
        "SLUICE_LINK_TTL_SECS",
        Group::Limits,
        Parse::Seconds,
        Value("300"),
        "download link lifetime",
    ),
    s(
        "SLUICE_UPLOAD_TTL_SECS",
        Group::Limits,
        Parse::Seconds,
        Value("900"),
        "upload link lifetime (checked when the upload starts); at most the handle lifetime",
    ),
    s(
        "SLUICE_MAX_UPLOAD_BYTES",
        Group::Limits,
        Parse::Positive,
        Unset(
            "with the local store, SLUICE_QUOTA_BYTES; with S3, its largest object (10,000 parts of 5 GiB, 48.8 TiB)",
        ),
        "largest file",
    ),
    s(
        "SLUICE_PART_BYTES",
        Group::Limits,
        Parse::Positive,
        Value("67108864"),
        "size of each part of a file uploaded in parts on S3, and of each request of the page's and the widget's resumable upload where sluice receives the bytes (64 MiB; rounded up to whole MiB, at least 5 MiB, at most 5 GiB; larger where 10,000 parts would not hold the file)",
    ),
    s(
        "SLUICE_PROOF_MILLIS",
        Group::Limits,
        Parse::Positive,
        Value("20000"),
        "milliseconds one completion of an upload in parts on S3 reads to prove the file before answering 202 (`verifying`); the upload line asks again until it is proven (API Gateway ends a request at 30 s)",
    ),
    s(
        "SLUICE_SINGLE_PUT_MAX_BYTES",
        Group::Limits,
        Parse::Positive,
        Value("67108864"),
        "on S3, files up to this size are uploaded in one PUT, larger ones in parts that a rerun of the same command resumes (where sluice receives the bytes a file of any size is one resumable stream, whose upload link lives as long as its record above this size) (64 MiB)",
    ),
    s(
        "SLUICE_BODY_IDLE_TIMEOUT_SECS",
        Group::Limits,
        Parse::Seconds,
        Value("30"),
        "an upload whose body sends nothing for this long is ended (408)",
    ),
    s(
        "SLUICE_VIEW_EMBED_MAX_BYTES",
        Group::Limits,
        Parse::Positive,
        Value("8388608"),
        "the download view in the chat fetches files up to this size from sluice, checks their SHA-256 and hands them to the host to save as embedded content (what Claude saves); larger ones it opens as the person's link (8 MiB)",
    ),
    s(
        "SLUICE_DOWNLOAD_URL_TTL_SECS",
        Group::Aws,
        Parse::Seconds,
        Value("10"),
        "lifetime of the presigned GET a link redirects to (at most 60): the client follows the redirect at once, and until it expires whoever holds the URL can fetch the file again",
    ),
];
