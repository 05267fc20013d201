//! Malware scanning, one group: which scanner decides whether a file may
//! be used, where clamd listens, how many scans run at once, how long a
//! file may wait for its verdict, and what becomes of a file the scanner
//! cannot scan. The gate itself is `service::gate`.

use std::time::Duration;

use super::ConfigError;
use super::read::{Vars, invalid};
use super::refuse;
use super::settings::Default::{Unset, Value};
use super::settings::Group;
use super::settings::{Parse, Setting, s};

/// Which scanner decides (`SLUICE_SCAN`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanMode {
    /// No scan: a file is ready once its bytes are stored and proven.
    Off,
    /// clamd, sent each file's bytes with `INSTREAM` by this server.
    Clamd(ClamdAddress),
    /// GuardDuty Malware Protection for S3, which scans each object of the
    /// bucket's `files/` prefix and tags it: sluice reads the tag.
    GuardDuty,
}

/// Where clamd listens (`SLUICE_CLAMD`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClamdAddress {
    /// A Unix socket (`unix:/run/clamav/clamd.ctl`).
    Unix(std::path::PathBuf),
    /// A TCP address (`tcp:127.0.0.1:3310`).
    Tcp(String),
}

impl ClamdAddress {
    /// Parses `unix:/path` or `tcp:host:port`.
    pub fn parse(value: &str) -> Option<Self> {
        if let Some(path) = value.strip_prefix("unix:") {
            return (!path.is_empty()).then(|| Self::Unix(path.into()));
        }
        let addr = value.strip_prefix("tcp:")?;
        let (host, port) = addr.rsplit_once(':')?;
        (!host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0))
            .then(|| Self::Tcp(addr.to_owned()))
    }
}

impl std::fmt::Display for ClamdAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
            Self::Tcp(addr) => write!(f, "tcp:{addr}"),
        }
    }
}

/// The `scan` group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Which scanner (`SLUICE_SCAN`, `SLUICE_CLAMD`).
    pub mode: ScanMode,
    /// The most bytes clamd takes in one stream, its `StreamMaxLength`
    /// (`SLUICE_CLAMD_STREAM_MAX_BYTES`): a stream clamd ends before its
    /// last byte is "cannot scan" only for a file over it; any other break
    /// is a scan to try again.
    pub clamd_stream_max: u64,
    /// Scans at once in one server, shared among the files' owners in
    /// turn (`SLUICE_SCANS_AT_ONCE`).
    pub at_once: usize,
    /// One attempt at a file's scan (`SLUICE_SCAN_TIMEOUT_SECS`).
    pub timeout: Duration,
    /// How long a file may wait for its verdict, from its scan's first
    /// attempt (a file waiting for a turn is not held to it): past it, it
    /// is `unscanned` (`SLUICE_SCAN_DEADLINE_SECS`).
    pub deadline: Duration,
    /// Whether a file the scanner cannot scan (over its size limit, a type
    /// it does not take) is let through (`SLUICE_SCAN_UNSCANNED=allow`) or
    /// refused (`refuse`, the default). A file with no verdict by the
    /// deadline is refused whatever this says.
    pub allow_unscanned: bool,
    /// What is done with the type its bytes show (`SLUICE_TYPE_CHECK`).
    pub type_check: TypeCheck,
}

/// What the gate does with a file's type as its first bytes show it
/// (`SLUICE_TYPE_CHECK`; [`crate::types`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeCheck {
    /// Nothing is read.
    Off,
    /// The detected type is recorded, shown and signed; nothing refused.
    Note,
    /// As `note`, and a file whose bytes are an executable or an archive
    /// while declared a document is rejected, its bytes deleted.
    Refuse,
}

impl Scan {
    /// Whether files are scanned before they are used.
    pub fn on(&self) -> bool {
        self.mode != ScanMode::Off
    }

    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let mode = match vars.value("SLUICE_SCAN") {
            Some("clamd") => {
                let raw = vars.raw("SLUICE_CLAMD").ok_or_else(|| {
                    invalid(
                        "SLUICE_CLAMD",
                        "SLUICE_SCAN=clamd needs where clamd listens: unix:/path/clamd.sock or tcp:host:port",
                    )
                })?;
                ScanMode::Clamd(ClamdAddress::parse(raw.trim()).ok_or_else(|| {
                    invalid("SLUICE_CLAMD", "is unix:/path/clamd.sock or tcp:host:port")
                })?)
            }
            Some("guardduty") => ScanMode::GuardDuty,
            _ => ScanMode::Off,
        };
        Ok(Self {
            mode,
            clamd_stream_max: vars.positive("SLUICE_CLAMD_STREAM_MAX_BYTES")?,
            at_once: vars.count("SLUICE_SCANS_AT_ONCE")?,
            timeout: vars.secs("SLUICE_SCAN_TIMEOUT_SECS")?,
            deadline: vars.secs("SLUICE_SCAN_DEADLINE_SECS")?,
            allow_unscanned: vars.value("SLUICE_SCAN_UNSCANNED") == Some("allow"),
            type_check: match vars.value("SLUICE_TYPE_CHECK") {
                Some("off") => TypeCheck::Off,
                Some("refuse") => TypeCheck::Refuse,
                _ => TypeCheck::Note,
            },
        })
    }
}

/// clamd is sent the bytes by a server that lives on: a function is frozen
/// once it answers. GuardDuty scans objects in a bucket.
pub(super) fn rules(vars: &Vars, in_bucket: bool) -> Result<(), ConfigError> {
    match vars.value("SLUICE_SCAN") {
        Some("clamd") if vars.in_lambda() => refuse(
            "SLUICE_SCAN",
            "clamd scans run in the background of the server, which a Lambda function does not \
             keep: on AWS use SLUICE_SCAN=guardduty (the template's MalwareScan parameter)",
        ),
        Some("guardduty") if !in_bucket => refuse(
            "SLUICE_SCAN",
            "GuardDuty scans objects in S3: it needs SLUICE_STORE=s3 (locally, use clamd)",
        ),
        _ => Ok(()),
    }
}

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_SCAN",
        Group::Scan,
        Parse::OneOf(&["off", "clamd", "guardduty"]),
        Value("off"),
        "whether a file is scanned for malware before it is used: `off`; `clamd` (this server streams each file's bytes to clamd, `SLUICE_CLAMD`); `guardduty` (GuardDuty Malware Protection for S3 scans each object and tags it; the template's `MalwareScan`). Until its verdict a file is `scanning`, and nothing hands out its bytes ([operations](operations.md))",
    ),
    s(
        "SLUICE_CLAMD",
        Group::Scan,
        Parse::Text,
        Unset("—"),
        "where clamd listens, with `SLUICE_SCAN=clamd`: `unix:/run/clamav/clamd.ctl` or `tcp:127.0.0.1:3310`",
    ),
    s(
        "SLUICE_CLAMD_STREAM_MAX_BYTES",
        Group::Scan,
        Parse::Positive,
        Value("104857600"),
        "clamd's `StreamMaxLength` (set it as clamd.conf does; clamd's own default is 100M): a file over it that clamd cuts off is one it cannot scan (`SLUICE_SCAN_UNSCANNED`); any other break of the stream is tried again",
    ),
    s(
        "SLUICE_SCANS_AT_ONCE",
        Group::Scan,
        Parse::Positive,
        Value("2"),
        "files streamed to clamd at once by one server, the turns shared among the files' owners in rotation (one user's many files never hold back another's)",
    ),
    s(
        "SLUICE_SCAN_TIMEOUT_SECS",
        Group::Scan,
        Parse::Seconds,
        Value("600"),
        "one attempt at a file's scan; one that fails (clamd down, or too slow) is tried again, with growing waits, until the deadline",
    ),
    s(
        "SLUICE_SCAN_DEADLINE_SECS",
        Group::Scan,
        Parse::Seconds,
        Value("3600"),
        "how long a file may stay `scanning`, from its scan's first attempt (time waiting for a turn does not count): past it, it is rejected (`unscanned`) and its bytes deleted",
    ),
    s(
        "SLUICE_TYPE_CHECK",
        Group::Scan,
        Parse::OneOf(&["off", "note", "refuse"]),
        Value("note"),
        "the type a file's first bytes show, beside the one declared: `note` records it (`list_files`' `detected_type`, the receipt); `refuse` also rejects a file whose bytes are an executable or an archive while it is declared a document (text, PDF, an image, an office document), its bytes deleted, the reason given; `off` reads nothing",
    ),
    s(
        "SLUICE_SCAN_UNSCANNED",
        Group::Scan,
        Parse::OneOf(&["refuse", "allow"]),
        Value("refuse"),
        "a file the scanner says it cannot scan (over clamd's `StreamMaxLength` or GuardDuty's size limit, or GuardDuty's `UNSUPPORTED`, `ACCESS_DENIED` or `FAILED`): `refuse` rejects it (`unscanned`), `allow` lets it through, its verdict saying it was not scanned",
    ),
];
