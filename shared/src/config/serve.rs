//! Where and how the server listens, one group: read whole here, held as
//! it is by whoever serves.

use std::net::IpAddr;
use std::time::Duration;

use super::ConfigError;
use super::read::{Vars, invalid};
use super::settings::Default::Value;
use super::settings::Group;
use super::settings::{Parse, Setting, s};

/// The listener and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Serve {
    /// Address to listen on (`SLUICE_HOST`, default `127.0.0.1`).
    pub host: IpAddr,
    /// Port to listen on (`SLUICE_PORT`, default 8787; 0 picks a free one).
    pub port: u16,
    /// Open connections at once (`SLUICE_MAX_CONNECTIONS`, default 1024);
    /// more wait to be accepted.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers
    /// (`SLUICE_HEADER_READ_TIMEOUT_SECS`, default 10).
    pub header_read_timeout: Duration,
    /// How long a write to a client may wait (`SLUICE_WRITE_TIMEOUT_SECS`,
    /// default 30).
    pub write_timeout: Duration,
    /// How long a request body other than an upload's may take to arrive
    /// (`SLUICE_BODY_READ_TIMEOUT_SECS`, default 30).
    pub body_read_timeout: Duration,
    /// The largest MCP request body (`SLUICE_MCP_MAX_BODY_BYTES`, default 256 KiB).
    pub mcp_max_body_bytes: u64,
}

impl Serve {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            host: vars
                .value("SLUICE_HOST")
                .and_then(|h| h.parse().ok())
                .ok_or_else(|| invalid("SLUICE_HOST", "must be an IP address"))?,
            port: vars
                .value("SLUICE_PORT")
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| invalid("SLUICE_PORT", "must be a port number"))?,
            max_connections: vars.count("SLUICE_MAX_CONNECTIONS")?,
            header_read_timeout: vars.secs("SLUICE_HEADER_READ_TIMEOUT_SECS")?,
            write_timeout: vars.secs("SLUICE_WRITE_TIMEOUT_SECS")?,
            body_read_timeout: vars.secs("SLUICE_BODY_READ_TIMEOUT_SECS")?,
            mcp_max_body_bytes: vars.positive("SLUICE_MCP_MAX_BODY_BYTES")?,
        })
    }
}

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_HOST",
        Group::Core,
        Parse::Ip,
        Value("127.0.0.1"),
        "address to listen on",
    ),
    s(
        "SLUICE_PORT",
        Group::Core,
        Parse::Port,
        Value("8787"),
        "port (`0` picks a free one)",
    ),
    s(
        "SLUICE_STRICT",
        Group::Core,
        Parse::Flag,
        Value("false"),
        "refuse to start when a `SLUICE_*` variable is not a setting (a typo); otherwise each is named in the log at start, with the nearest setting, and ignored (`sluice serve --strict` does the same)",
    ),
    s(
        "SLUICE_MCP_MAX_BODY_BYTES",
        Group::Limits,
        Parse::Positive,
        Value("262144"),
        "largest MCP request body",
    ),
    s(
        "SLUICE_MAX_CONNECTIONS",
        Group::Limits,
        Parse::Positive,
        Value("1024"),
        "open connections at once; more wait to be accepted",
    ),
    s(
        "SLUICE_HEADER_READ_TIMEOUT_SECS",
        Group::Limits,
        Parse::Seconds,
        Value("10"),
        "a connection that has not sent a request's headers by then is closed",
    ),
    s(
        "SLUICE_WRITE_TIMEOUT_SECS",
        Group::Limits,
        Parse::Seconds,
        Value("30"),
        "a client that reads nothing of an answer for this long (a download opened and never read) is cut off, freeing its transfer slot",
    ),
    s(
        "SLUICE_BODY_READ_TIMEOUT_SECS",
        Group::Limits,
        Parse::Seconds,
        Value("30"),
        "a request body other than an upload's must arrive whole within this (a body trickled a byte at a time is cut off)",
    ),
];
