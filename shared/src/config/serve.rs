//! Where and how the server listens, one group: read whole here, held as
//! it is by whoever serves.

use std::net::IpAddr;
use std::time::Duration;

use super::ConfigError;
use super::read::{Vars, invalid};

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
